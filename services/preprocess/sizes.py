"""What a sample's preprocessing steps will make of it, known from its header alone.

The pixel budget of a decoded image (``max_image_pixels``) does not bound what the steps
after it allocate: a 1x60000 PNG is 60000 pixels, and a resize to 256 on its short side
with the aspect kept asks for 256 x 15360000 x 3 bytes (12 GB). Every size a step makes
follows from the input's size and the steps (ResizeStep.target_size, the crop's size), so
it is checked here, from the header, before any pixel is decoded; services/preprocess/
decode.py turns a problem into that sample's DecodeError.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from services.core.manifest_sections import CenterCropStep, Input, PreprocessStep, ResizeStep
from shared.settings import Settings

OUTPUT_SETTING = "BENCHSTACK_MAX_OUTPUT_PIXELS"
ASPECT_SETTING = "BENCHSTACK_MAX_ASPECT_RATIO"


@dataclass(frozen=True)
class OutputBounds:
    """The steps after decode, and what their outputs may be: at most ``max_pixels``
    pixels each, from an image at most ``max_aspect`` times as long as it is wide."""

    steps: tuple[PreprocessStep, ...]
    max_pixels: int
    max_aspect: float

    @classmethod
    def of(cls, spec: Input, settings: Settings) -> OutputBounds:
        return cls(
            steps=tuple(step for step in spec.steps if step.op != "decode"),
            max_pixels=settings.max_output_pixels,
            max_aspect=settings.max_aspect_ratio,
        )

    def problem(self, width: int, height: int) -> str | None:
        """Why an image of ``width`` x ``height`` is refused, or None. Says its size and
        what is accepted."""
        size = f"image of {width}x{height} pixels"
        if width < 1 or height < 1:
            return f"{size} has no pixels"
        aspect = max(width, height) / min(width, height)
        if aspect > self.max_aspect:
            return (
                f"{size} is {aspect:.0f} times as long as it is wide; accepted: at most "
                f"{self.max_aspect:g} times ({ASPECT_SETTING})"
            )
        step, (out_h, out_w) = largest_output(self.steps, height, width)
        if step is not None and out_h * out_w > self.max_pixels:
            return (
                f"{size} would be {out_w}x{out_h} after {step} ({out_h * out_w} pixels); "
                f"accepted: at most {self.max_pixels} pixels after any step ({OUTPUT_SETTING})"
            )
        return None


def largest_output(
    steps: Sequence[PreprocessStep], height: int, width: int
) -> tuple[str | None, tuple[int, int]]:
    """The step (described: "resize to 256") whose output of an image of ``height`` x
    ``width`` has the most pixels, and that (height, width); (None, the input's size)
    when no step changes the size."""
    largest: tuple[str | None, tuple[int, int]] = (None, (height, width))
    for step in steps:
        if isinstance(step, ResizeStep):
            height, width = step.target_size(height, width)
            described = f"resize to {step.size}"
        elif isinstance(step, CenterCropStep):
            height, width = (step.size, step.size) if isinstance(step.size, int) else step.size
            described = f"center_crop to {step.size}"
        else:
            continue
        if largest[0] is None or height * width > largest[1][0] * largest[1][1]:
            largest = (described, (height, width))
    return largest
