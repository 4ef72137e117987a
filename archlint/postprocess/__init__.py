"""After the checks, before the reporters: suppressions, levels, per-file ignores, report paths,
baseline (`apply`), and the fixes findings carry (`fixes`). Every front end goes through `postprocess`."""

from archlint.postprocess.apply import Postprocessed, PostprocessSettings, postprocess

__all__ = ["PostprocessSettings", "Postprocessed", "postprocess"]
