"""``fasbench report`` (registered through ``fasbench.cli.PLUGINS``): the static HTML report of executed
notebooks (``fasbench.mainjob.report``; ``make run`` calls it)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        notebooks: list[str] = typer.Argument(..., help="a folder of executed NN_*.ipynb, or notebook files"),
        out: str = typer.Option("runs/report", "--out", help="output folder (index.html)"),
        js: str | None = typer.Option(
            None,
            "--js",
            help="folder with embed-amd.js (+ fonts) of "
            "@jupyter-widgets/html-manager and require.js, copied beside the page "
            "so that it renders offline (default: their CDN)",
        ),
    ):
        """One static HTML report of executed notebooks (outputs, figures, widgets' saved state)."""
        # local import: the report loads nbconvert, heavy; only this command needs it
        from fasbench.mainjob.report import report_command

        code = report_command(notebooks, out, js)
        if code:
            raise typer.Exit(code)
