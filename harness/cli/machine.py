"""This machine: doctor, base images, pruning leftovers."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import console, main


@main.command()
@click.option("--model", default=None, help="also check this model's credentials and price (nothing is sent to it)")
@click.option("--allow-unknown-model", is_flag=True, help="a model the price map does not know is not a problem")
def doctor(model, allow_unknown_model):
    """Check that this machine can run tasks; each problem comes with the command that fixes it.
    Exit 1 when it cannot (see `wholeloop --help`)."""
    from ..doctor import run_checks
    from .exit_codes import NEGATIVE, OK

    ok = run_checks(console(), model=model, allow_unknown_model=allow_unknown_model)
    sys.exit(OK if ok else NEGATIVE)


@main.group()
def images():
    """Base images and the image cache."""


@images.command("bootstrap")
@click.option("--tag", default=None, help="image tag (default wholeloop/base:bookworm)")
@click.option("--suite", default="bookworm", show_default=True)
@click.option("--mirror", default="http://deb.debian.org/debian", show_default=True)
@click.option("--force", is_flag=True, help="rebuild even when the image exists")
def images_bootstrap(tag, suite, mirror, force):
    """Build the base image with no registry (debootstrap + docker import; about a minute)."""
    from sandbox.docker import DEFAULT_BASE, bootstrap_base_image, image_exists

    tag = tag or DEFAULT_BASE
    if image_exists(tag) and not force:
        click.echo(f"{tag} is already present (use --force to rebuild)")
        return
    click.echo(f"building {tag} from Debian {suite} with debootstrap ...")
    built = bootstrap_base_image(tag, suite=suite, mirror=mirror, log=click.echo)
    click.echo(f"built {tag} ({built.id[:19]})")


@images.command("list")
def images_list():
    """Images wholeloop made (base, env, deps, task and checks tiers)."""
    from sandbox.docker import list_images

    for img in list_images():
        click.echo(f"{img.tier:5} {', '.join(img.tags) or img.id[7:19]:40} {img.size_bytes / 1e6:8.0f} MB")


@main.command()
@click.option("--all", "all_owners", is_flag=True, help="also containers of runs that look alive")
@click.option("--images", "with_images", is_flag=True, help="also remove env, task and checks images (they rebuild)")
@click.option(
    "--run",
    "run_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="only the containers of this run folder",
)
def prune(all_owners, with_images, run_dir):
    """Remove containers left behind by runs that are no longer alive (never a live run's)."""
    from sandbox.docker import prune_containers, remove_images

    run_id = run_dir.resolve().name if run_dir is not None else None  # what its containers are labelled with
    report = prune_containers(all_owners=all_owners, run_id=run_id)
    scope = f" of run {run_id}" if run_id else ""
    click.echo(f"removed {len(report.removed)} container(s){scope}; kept {len(report.kept_live)} of live runs")
    if with_images:
        # the checks layers first: they are built on the task images
        for name in remove_images(("checks", "checktools", "env", "task")):
            click.echo(f"removed image {name}")
