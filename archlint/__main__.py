"""`python -m archlint` runs the command line."""

from archlint.cli.commands import main

if __name__ == "__main__":
    main()
