"""Layer 6, the main job: every notebook run by ``make run`` (``run.py``) and its HTML report (``report.py``)."""
