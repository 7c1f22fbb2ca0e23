"""mkdocs hook: serve the repository's ``figures/`` (drawn by ``experiments/``) as
``figures/*.png`` of the site, so that the pages show the committed figures without a
copy of them under ``docs/``."""

from pathlib import Path

from mkdocs.structure.files import File

FIGURES = Path(__file__).resolve().parents[1] / "figures"


def on_files(files, config):
    for figure in sorted(FIGURES.glob("*.png")):
        files.append(File.generated(config, f"figures/{figure.name}",
                                    abs_src_path=str(figure)))
    return files
