"""Runtime mode: read the GPU this machine has (or a profile standing in for one), then report the
static verdicts in that device's terms and prove them with the compiler and the driver.

Every submodule imports its heavy parts lazily; importing this package costs nothing.
"""
