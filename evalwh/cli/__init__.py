"""The command line: argument parsing and rendering only; every command calls evalwh.api."""
