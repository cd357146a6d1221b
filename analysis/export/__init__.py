"""Paper-ready files: figures and tables as files, safe CSV, and the report of a whole workspace."""
