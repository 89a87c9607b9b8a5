"""benchstack preprocessing vs torchvision's PIL pipeline, side by side, one core.

Three sets of JPEGs: photo-like ones (smooth gradients, shapes and noise, JPEG quality 90,
generated deterministically) at 500x375 and 12 MP, and scikit-learn's two real photos
(640x427, saved with little compression; no other real photos can be downloaded here),
each set --images files. Both pipelines
produce Resize(256) + CenterCrop(224) + ToTensor + Normalize (ImageNet mean/std) and are
timed in interleaved rounds so load from other processes falls on both alike.

    PYTHONPATH=$PWD python3 -m benchmarks.preprocess_throughput --images 16 --rounds 3

Two benchstack modes (Input.fidelity): "reference", bit-identical to torchvision, and
"fast" (libjpeg-turbo through simplejpeg, decoding the reference's pixels, and torch's
8-bit resize only up to the crop); the distance of each from torchvision after normalize
is printed, and the top-5 classes of four catalogue models on real photos in both modes.

"benchstack fast" is what a preprocess worker does per shard: its stored form, the planar
8-bit crops (batch.deferred_normalize), normalized where the shard is loaded, in the
QSL's untimed load callback. "fast+finish" times that normalize too, so the row compares
the whole work to float tensors with torchvision's. "(full decode alone)" decodes each
JPEG whole and does nothing else: its ratio is the ceiling of any pipeline that decodes
every pixel. "(entropy decode alone)" decodes each at 1/8 scale, which still reads every
coefficient (a sequential JPEG cannot be entered mid-stream) but transforms and converts
next to nothing: its ratio is the ceiling of any pipeline that reads the JPEG with
libjpeg-turbo on this core, exact or not. "(decode limit)" decodes each JPEG at the DCT
scale the fast mode decodes it at for this output (decode.dct_denominator) and does
nothing else: no pipeline that decodes those pixels can be faster, and each set ends
with "fast at X % of the decode limit" (the decode limit's time over the fast mode's,
the median of the rounds'; issue 34's target is 85 %, i.e. everything after the decode
at most 0.18 of its time), and the decode limit's time over the entropy decode's (the
floor no exact pipeline on libjpeg-turbo goes under). Each ratio is the median of the
rounds' ratios, with the rounds' range. ``--quick`` runs only the one-core comparison
of each set (the decode limit included), for a check in seconds.
"""

from __future__ import annotations

import argparse
import io
import math
import multiprocessing
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path
from statistics import median

import numpy as np
import simplejpeg
import torch
from PIL import Image, ImageDraw

from services.core.manifest_sections import Input
from services.preprocess.batch import planar_steps, preprocess_batch
from services.preprocess.datasets import Sample
from services.preprocess.decode import dct_denominator
from services.preprocess.device_decode import prepare_on_device, unavailable_reason
from services.preprocess.pipeline import pool_size, preprocess
from shared.devices import DeviceError, parse_device
from shared.host_load import HostLoadSampler, usable_cpus
from shared.memory_pages import prefer_ordinary_pages

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
BATCH_PER_TASK = 8  # images a pool process prepares per task, in both pipelines
ALL_CORES_BYTES = 32 * 1024 * 1024  # of JPEG files per all-cores pass
TARGET_RATIO = 2.5  # issue 11: fast / torchvision per core
TARGET_OF_DECODE_LIMIT = 0.85  # issue 34: decode-limit time / fast time, per core
MAX_IMAGES = 1024  # per set: the 12 MP set alone writes ~3 MB of JPEG per image
MAX_ROUNDS = 100
SIZES = {"photo 500x375": (500, 375), "12 MP 4000x3000": (4000, 3000)}


def photo_like_jpeg(width: int, height: int, seed: int) -> bytes:
    """A JPEG with a photo's structure: smooth gradients, a few shapes, sensor-like noise."""
    rng = np.random.default_rng(seed)
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    base = np.stack(
        [
            128 + 100 * np.sin(xs / width * rng.uniform(1, 4) + c) * np.cos(ys / height * 3)
            for c in range(3)
        ],
        axis=-1,
    )
    image = Image.fromarray(np.clip(base, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for _ in range(8):
        x0, y0 = int(rng.integers(0, width)), int(rng.integers(0, height))
        x1, y1 = (
            x0 + int(rng.integers(width // 10, width // 3)),
            y0 + int(rng.integers(height // 10, height // 3)),
        )
        colour = tuple(int(v) for v in rng.integers(0, 256, 3))
        draw.ellipse((x0, y0, x1, y1), fill=colour)
    noisy = np.asarray(image).astype(np.int16) + rng.normal(0, 6, (height, width, 3)).astype(
        np.int16
    )
    buffer = io.BytesIO()
    Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)).save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def benchstack_spec(mode: str = "reference") -> Input:
    return Input.model_validate(
        {
            "shape": (3, 224, 224),
            "fidelity": mode,
            "steps": [
                {"decode": {}},
                {"resize": {"size": 256}},
                {"center_crop": {"size": 224}},
                {"normalize": {"mean": MEAN, "std": STD}},
                {"layout": {"order": "NCHW"}},
            ],
        }
    )


def torchvision_pipeline() -> Callable[[Path], torch.Tensor]:
    from torchvision import transforms

    transform = transforms.Compose(
        [
            transforms.Resize(256),
            transforms.CenterCrop(224),
            transforms.ToTensor(),
            transforms.Normalize(MEAN, STD),
        ]
    )

    def run(path: Path) -> torch.Tensor:
        with Image.open(path) as image:
            return transform(image.convert("RGB"))

    return run


def bounded_count(name: str, most: int) -> Callable[[str], int]:
    """An argparse type: a whole number from 1 to ``most``, else an error naming ``name``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if not 1 <= value <= most:
            raise argparse.ArgumentTypeError(
                f"{name}: {text!r} is not accepted; a whole number from 1 to {most}"
            )
        return value

    return parse


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--images",
        type=bounded_count("--images", MAX_IMAGES),
        default=16,
        help=f"images per set (1 to {MAX_IMAGES})",
    )
    parser.add_argument(
        "--rounds",
        type=bounded_count("--rounds", MAX_ROUNDS),
        default=3,
        help=f"interleaved rounds (1 to {MAX_ROUNDS})",
    )
    parser.add_argument(
        "--device",
        help="also decode each set on this device (cuda, cuda:<index>; cpu runs the same code "
        "on torchvision's CPU decoder) and compare with the CPU fast path: images/s side "
        "by side, and how many levels the crops differ",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="only the one-core comparison of each set (no all-cores runs, no per-photo "
        "rows, no top-5)",
    )
    args = parser.parse_args(argv)
    if args.device is not None:
        why = device_problem(args.device)
        if why:
            parser.error(why)
    torch.set_num_threads(1)
    prefer_ordinary_pages()  # as benchstack's own processes run (shared/memory_pages.py)
    specs = {name: benchstack_spec(name) for name in ("reference", "fast")}
    tv = torchvision_pipeline()
    with tempfile.TemporaryDirectory() as tmp:
        for label, paths in image_sets(Path(tmp), args.images).items():
            print(f"{label}, one core, {args.images} images x {args.rounds} rounds:")
            with HostLoadSampler() as load:
                compare_rates(paths, specs, tv, args.rounds)
                if args.device is not None:
                    compare_device(paths, specs["fast"], args.device, args.rounds)
            # Interleaved rounds share the host's load, but a busy host moves the ratios.
            print(f"  host meanwhile: {load.result.reason}")
            if args.quick:
                continue
            processes = usable_cpus()
            if processes > 1:
                compare_all_cores(label, paths, specs, args.rounds, processes)
            print_differences(paths, specs, tv)
        if args.quick:
            return
        photos = real_photos()
        print_each_real_photo(photos, specs, tv, Path(tmp), args.images, args.rounds)
        print_top5(specs, photos)


def image_sets(folder: Path, count: int) -> dict[str, list[Path]]:
    """``count`` JPEGs per set: the photo-like ones at each size in SIZES, and scikit-learn's
    two real photos (640x427, 197 and 143 kB: little compression, so much more entropy
    decoding per pixel than the photo-like ones) copied in turn."""
    import sklearn

    sets: dict[str, list[Path]] = {}
    for label, (width, height) in SIZES.items():
        sets[label] = []
        for i in range(count):
            path = folder / f"{width}x{height}-{i}.jpg"
            path.write_bytes(photo_like_jpeg(width, height, seed=i))
            sets[label].append(path)
    photos = sorted((Path(sklearn.__file__).parent / "datasets" / "images").glob("*.jpg"))
    real = f"real photos 640x427 ({', '.join(p.name for p in photos)})"
    sets[real] = []
    for i in range(count):
        path = folder / f"real-{i}-{photos[i % len(photos)].name}"
        shutil.copyfile(photos[i % len(photos)], path)
        sets[real].append(path)
    return sets


def print_interleaved_rates(
    pipelines: dict[str, Callable[[], object]], images: int, rounds: int
) -> dict[str, list[float]]:
    """Time each pipeline (one pass over ``images`` images) in interleaved rounds, so load
    from other processes falls on all alike; print images/s over all rounds and the ratio
    to torchvision: the median of the rounds' ratios (each round's pipelines ran next to
    each other), with the lowest and highest round's, the spread this host's noise gave."""
    seconds = time_interleaved(pipelines, rounds)
    baseline = seconds["torchvision"]
    for name, times in seconds.items():
        rate = images * rounds / sum(times)
        ratios = round_ratios(baseline, times)
        spread = f" (rounds x{min(ratios):.2f} to x{max(ratios):.2f})" if rounds > 1 else ""
        print(f"  {name:<26} {rate:7.1f} img/s  x{median(ratios):.2f} torchvision{spread}")
    return seconds


def decode_alone(paths: list[Path]) -> None:
    """Every pixel of each JPEG decoded by libjpeg-turbo as the fast mode decodes (its
    accurate IDCT and smooth chroma upsampling, Pillow's pixels), nothing else: the floor
    of any pipeline that decodes whole images so, and its ratio to torchvision the
    ceiling of theirs."""
    for path in paths:
        simplejpeg.decode_jpeg(path.read_bytes(), fastdct=False, fastupsample=False)


def decode_limit(paths: list[Path], spec: Input) -> None:
    """Each JPEG decoded as the fast mode decodes it for ``spec``'s output (the DCT scale
    decode.dct_denominator picks for its resize, accurate IDCT, smooth upsampling) and
    nothing else: the time no pipeline decoding those pixels goes under."""
    steps = planar_steps(spec)
    resize = steps[0] if steps is not None else None
    for path in paths:
        data = path.read_bytes()
        full_h, full_w, _, _ = simplejpeg.decode_jpeg_header(data)
        denominator = dct_denominator(full_h, full_w, resize)
        simplejpeg.decode_jpeg(
            data,
            fastdct=False,
            fastupsample=False,
            min_height=-(-full_h // denominator),
            min_width=-(-full_w // denominator),
        )


def share_of_decode_limit(limit: list[float], pipeline: list[float]) -> float:
    """The decode limit's time over the pipeline's, the median of the rounds' (1.0: the
    pipeline costs nothing beyond its decode)."""
    return median(round_ratios(limit, pipeline))


def print_decode_limit(seconds: dict[str, list[float]], images: int) -> None:
    """The fast mode against the decode limit, and the decode limit against entropy
    decoding alone, from one set's interleaved rounds."""
    limit = seconds["(decode limit)"]
    per_image = median(limit) / images * 1e3
    for name in ("benchstack fast", "benchstack fast+finish"):
        share = share_of_decode_limit(limit, seconds[name])
        rest = (median(seconds[name]) - median(limit)) / images * 1e3
        verdict = "met" if share >= TARGET_OF_DECODE_LIMIT else "not met"
        print(
            f"  {name[len('benchstack ') :]} at {share:.0%} of the decode limit "
            f"({per_image:.2f} ms/img decoding, {rest:+.2f} ms/img after it; "
            f"target {TARGET_OF_DECODE_LIMIT:.0%}: {verdict})"
        )
    floor = share_of_decode_limit(limit, seconds["(entropy decode alone)"])
    print(
        f"  entropy decoding alone takes {1 / floor:.0%} of the decode limit's time "
        "(the part no exact decode on libjpeg-turbo avoids)"
    )


def entropy_decode_alone(paths: list[Path]) -> None:
    """Each JPEG decoded at 1/8 scale: every Huffman-coded coefficient is still read, but
    each 8x8 block becomes one pixel, so what is timed is nearly all entropy decoding,
    which no decode of the file on this core avoids. Its ratio to torchvision bounds any
    CPU pipeline that starts from the JPEG, including ones that give up exact pixels."""
    for path in paths:
        simplejpeg.decode_jpeg(path.read_bytes(), min_height=1, min_width=1)


def compare_rates(
    paths: list[Path],
    specs: dict[str, Input],
    tv: Callable[[Path], torch.Tensor],
    rounds: int,
) -> None:
    """Images per second of each pipeline, timed in interleaved rounds."""
    samples = [Sample(id=p.name, path=p, label=None) for p in paths]
    pipelines: dict[str, Callable[[], object]] = {
        "torchvision": lambda: [tv(path) for path in paths]
    }
    for name, spec in specs.items():
        # What a preprocess worker does per shard: the tensors in their stored form.
        pipelines[f"benchstack {name}"] = partial(preprocess_batch, samples, spec, stored=True)
    # The fast shard normalized as the QSL's load callback does, timed here all the same.
    pipelines["benchstack fast+finish"] = partial(preprocess_batch, samples, specs["fast"])
    pipelines["(full decode alone)"] = partial(decode_alone, paths)
    pipelines["(decode limit)"] = partial(decode_limit, paths, specs["fast"])
    pipelines["(entropy decode alone)"] = partial(entropy_decode_alone, paths)
    seconds = print_interleaved_rates(pipelines, len(paths), rounds)
    print_decode_limit(seconds, len(paths))


def device_problem(device: str) -> str | None:
    """Why ``--device`` cannot decode here (what is accepted, or what is missing), or None."""
    try:
        parse_device(device, field="--device")
    except DeviceError as exc:
        return str(exc)
    missing = unavailable_reason(device)
    return f"--device {device}: {missing}" if missing else None


def compare_device(paths: list[Path], spec: Input, device: str, rounds: int) -> None:
    """The fast path's stored crops made on ``device`` (device_decode: nvJPEG on CUDA)
    against the CPU's fused path on one core, in interleaved rounds on the same host:
    images/s of each, and how far the crops are apart in 8-bit levels. A round on the
    device ends when its crops are on the host, so the device's work is all in it."""
    samples = [Sample(id=p.name, path=p, label=None) for p in paths]
    pipelines: dict[str, Callable[[], object]] = {
        "cpu path": partial(preprocess_batch, samples, spec, stored=True),
        "device path": partial(prepare_on_device, samples, spec, device=device, stored=True),
    }
    seconds = time_interleaved(pipelines, rounds)
    ratios = round_ratios(seconds["cpu path"], seconds["device path"])
    spread = f" (rounds x{min(ratios):.2f} to x{max(ratios):.2f})" if rounds > 1 else ""
    cpu_rate = len(paths) * rounds / sum(seconds["cpu path"])
    device_rate = len(paths) * rounds / sum(seconds["device path"])
    print(
        f"  decoded on {device}: {device_rate:7.1f} img/s, the CPU fast path "
        f"{cpu_rate:.1f} img/s on one core: x{median(ratios):.2f}{spread}"
    )
    on_device, _, _ = prepare_on_device(samples, spec, device=device, stored=True)
    on_cpu, _, _ = preprocess_batch(samples, spec, stored=True)
    assert on_device is not None and on_cpu is not None
    difference = np.abs(on_device.astype(np.int16) - on_cpu.astype(np.int16))
    print(
        f"  {device} crops vs the CPU's: max {difference.max()} levels, mean "
        f"{difference.mean():.3f}, {np.count_nonzero(difference) / difference.size:.1%} of "
        "values differ"
    )


_TORCHVISION: list[Callable[[Path], torch.Tensor]] = []


def _torchvision_one(path: Path) -> torch.Tensor:
    """torchvision's pipeline on one image, for a process pool (built once per process)."""
    if not _TORCHVISION:
        torch.set_num_threads(1)
        _TORCHVISION.append(torchvision_pipeline())
    return _TORCHVISION[0](path)


def compare_all_cores(
    label: str, paths: list[Path], specs: dict[str, Input], rounds: int, processes: int
) -> None:
    """Images per second with ``processes`` processes each: torchvision's pipeline mapped
    over a forked pool, benchstack's preprocess(processes=N), which starts as many as the
    work pays for (pipeline.pool_size); pool start-up included. The set is passed over
    as many times as makes ALL_CORES_BYTES of files, a dataset worth a pool."""
    passes = max(1, math.ceil(ALL_CORES_BYTES / sum(p.stat().st_size for p in paths)))
    paths = paths * passes
    samples = [Sample(id=f"{i}-{p.name}", path=p, label=None) for i, p in enumerate(paths)]
    chunks = math.ceil(len(samples) / BATCH_PER_TASK)
    used = pool_size(samples, processes, chunks)
    print(
        f"{label}, all {processes} cores, the set {passes} times ({len(paths)} images; "
        f"benchstack starts {used} processes; pool start-up included):"
    )
    fork = multiprocessing.get_context("fork")

    def torchvision_pool() -> None:
        with ProcessPoolExecutor(max_workers=processes, mp_context=fork) as pool:
            list(pool.map(_torchvision_one, paths, chunksize=BATCH_PER_TASK))

    pipelines: dict[str, Callable[[], object]] = {"torchvision": torchvision_pool}
    for name, spec in specs.items():
        pipelines[f"benchstack {name}"] = partial(
            preprocess, samples, spec, batch_size=BATCH_PER_TASK, processes=processes, stored=True
        )
    print_interleaved_rates(pipelines, len(paths), rounds)


TOP5_MODELS = ("resnet18", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0")


def sensitive_random_model(name: str, calibration: torch.Tensor) -> torch.nn.Module:
    """A catalogue model with random weights whose batch-norm statistics are measured on
    ``calibration``. Left at their initial statistics (mean 0, variance 1), random
    networks give nearly the same logits for every input (mobilenet_v2's top-6 tied to
    1e-10 here), and a top-5 check on them proves nothing. Calibrated, their top-5 follow
    the input, with neighbouring logits 1e-4 to 3e-2 apart: a harder test than a trained
    model, whose top classes stand further apart."""
    import torchvision

    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None)
    for module in model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            module.reset_running_stats()
            module.momentum = None  # a plain average over the calibration batch
    model.train()
    with torch.no_grad():
        model(calibration)
    return model.eval()


def print_top5(specs: dict[str, Input], photos: list[Path]) -> None:
    """Top-5 classes per real photo in both modes, for each of TOP5_MODELS (random
    weights, batch norm calibrated on the photos: nothing is downloaded here), with each
    comparison's margin: the smallest gap between neighbouring logits of the reference's
    top 6 against the largest change of any logit between the modes. The digits test
    (tests/services/preprocess/test_fidelity.py) checks a trained model's predictions."""
    samples = [Sample(id=p.name, path=p, label=None) for p in photos]
    tensors = {}
    for mode, spec in specs.items():
        batch, _, _ = preprocess_batch(samples, spec)
        assert batch is not None
        tensors[mode] = torch.from_numpy(batch)
    print(f"top-5 classes, reference vs fast, on {len(photos)} real photos:")
    for name in TOP5_MODELS:
        model = sensitive_random_model(name, tensors["reference"])
        with torch.inference_mode():
            reference, fast = model(tensors["reference"]), model(tensors["fast"])
        reordered, changed = [], []
        gaps, changes = [], []
        for index, photo in enumerate(photos):
            top6 = reference[index].topk(6).values
            gaps.append(float((top6[:-1] - top6[1:]).min()))
            changes.append(float((reference[index] - fast[index]).abs().max()))
            expected = reference[index].topk(5).indices.tolist()
            got = fast[index].topk(5).indices.tolist()
            if set(got) != set(expected):
                changed.append(photo.name)
            elif got != expected:
                reordered.append(photo.name)
        same = len(photos) - len(reordered) - len(changed)
        verdict = f"identical on {same} of {len(photos)}"
        if reordered:
            verdict += f"; same five, in another order, on {', '.join(reordered)}"
        if changed:
            verdict += f"; a class CHANGES on {', '.join(changed)}"
        print(
            f"  {name:<19} {verdict}; neighbouring logits >= {min(gaps):.4f} apart, "
            f"largest change {max(changes):.4f}"
        )


# Real photos shipped inside Python packages (nothing can be downloaded here): module,
# folder inside it, files. scikit-learn's are always installed (the test extra); the
# others come with the bench extra (pip install -e ".[bench]").
REAL_PHOTO_SOURCES = (
    ("sklearn", "datasets/images", ("china.jpg", "flower.jpg")),
    ("skimage", "data", ("rocket.jpg", "hubble_deep_field.jpg", "retina.jpg")),
    ("matplotlib", "mpl-data/sample_data", ("grace_hopper.jpg",)),
)
CHROMA = {0: "4:4:4", 1: "4:2:2", 2: "4:2:0"}


def real_photos() -> list[Path]:
    """Every real photo of REAL_PHOTO_SOURCES whose package is installed; says which not."""
    import importlib.util

    found: list[Path] = []
    for module, folder, names in REAL_PHOTO_SOURCES:
        spec = importlib.util.find_spec(module)
        if spec is None or spec.origin is None:
            left_out = ", ".join(names)
            print(f"(no {module}: its photos {left_out} are left out; pip install -e '.[bench]')")
            continue
        found.extend(Path(spec.origin).parent / folder / name for name in names)
    return found


def describe_jpeg(path: Path) -> str:
    """Size, chroma subsampling and bits per pixel: what sets a JPEG's decode cost."""
    from PIL import JpegImagePlugin

    with Image.open(path) as image:
        width, height = image.size
        chroma = (
            CHROMA.get(JpegImagePlugin.get_sampling(image), "other")
            if isinstance(image, JpegImagePlugin.JpegImageFile)
            else "not JPEG"
        )
    bits = path.stat().st_size * 8 / (width * height)
    return f"{width}x{height} {chroma} {bits:.1f} bit/px"


def print_each_real_photo(
    photos: list[Path],
    specs: dict[str, Input],
    tv: Callable[[Path], torch.Tensor],
    folder: Path,
    copies: int,
    rounds: int,
) -> None:
    """Per real photo (``copies`` copies of it, interleaved rounds, one core): torchvision's
    time per image, and the ratios to it of benchstack fast, of a full decode and of
    entropy decoding alone. Photos differ most in how many bits there are to
    entropy-decode per pixel: the full decode's ratio is the ceiling of any pipeline that
    decodes every pixel, the entropy decode's that of any CPU pipeline at all."""
    print(f"each real photo, one core, {copies} copies x {rounds} rounds (fast: stored form):")
    fast_ratios: list[float] = []
    out_of_reach: list[str] = []
    for photo in photos:
        paths = []
        for i in range(copies):
            path = folder / f"each-{i}-{photo.name}"
            shutil.copyfile(photo, path)
            paths.append(path)
        samples = [Sample(id=p.name, path=p, label=None) for p in paths]
        pipelines: dict[str, Callable[[], object]] = {
            "torchvision": partial(run_each, tv, paths),
            "fast": partial(preprocess_batch, samples, specs["fast"], stored=True),
            "decode": partial(decode_alone, paths),
            "limit": partial(decode_limit, paths, specs["fast"]),
            "entropy": partial(entropy_decode_alone, paths),
        }
        seconds = time_interleaved(pipelines, rounds)
        fast = median(round_ratios(seconds["torchvision"], seconds["fast"]))
        ceiling = median(round_ratios(seconds["torchvision"], seconds["decode"]))
        floor = median(round_ratios(seconds["torchvision"], seconds["entropy"]))
        of_limit = share_of_decode_limit(seconds["limit"], seconds["fast"])
        fast_ratios.append(fast)
        if floor < TARGET_RATIO:
            out_of_reach.append(photo.name)
        per_image = median(seconds["torchvision"]) / copies * 1e3
        print(
            f"  {photo.name:<22} {describe_jpeg(photo):<28} torchvision {per_image:5.2f} ms/img"
            f"  fast x{fast:.2f}  (full decode alone x{ceiling:.2f}, entropy decode alone "
            f"x{floor:.2f}); fast at {of_limit:.0%} of the decode limit"
        )
    if fast_ratios:
        at_target = sum(ratio >= TARGET_RATIO for ratio in fast_ratios)
        print(
            f"  fast over {len(fast_ratios)} photos: median x{median(fast_ratios):.2f}, "
            f"lowest x{min(fast_ratios):.2f}, highest x{max(fast_ratios):.2f}; "
            f"{at_target} of {len(fast_ratios)} at x{TARGET_RATIO} or more"
        )
    if out_of_reach:
        print(
            f"  entropy decoding alone is under x{TARGET_RATIO} on {', '.join(out_of_reach)}: "
            "no CPU pipeline reading those files reaches the target on this core"
        )


def round_ratios(baseline: list[float], own: list[float]) -> list[float]:
    """How many times faster than the baseline each round was (the two ran side by side
    within a round, so host drift between rounds cancels)."""
    return [base / mine for base, mine in zip(baseline, own, strict=True)]


def run_each(pipeline: Callable[[Path], torch.Tensor], paths: list[Path]) -> None:
    for path in paths:
        pipeline(path)


def time_interleaved(
    pipelines: dict[str, Callable[[], object]], rounds: int
) -> dict[str, list[float]]:
    """Seconds of each pipeline per round, the pipelines run in turn within each round,
    after one untimed pass of each (its first call pays for imports, page faults and
    libjpeg-turbo's set-up, which made a 2-image round's decode limit 3x too slow)."""
    for run in pipelines.values():
        run()
    seconds: dict[str, list[float]] = {name: [] for name in pipelines}
    for _ in range(rounds):
        for name, run in pipelines.items():
            start = time.perf_counter()
            run()
            seconds[name].append(time.perf_counter() - start)
    return seconds


def print_differences(
    paths: list[Path], specs: dict[str, Input], tv: Callable[[Path], torch.Tensor]
) -> None:
    """How far each mode's tensors are from torchvision's, after normalize."""
    samples = [Sample(id=p.name, path=p, label=None) for p in paths]
    expected = torch.stack([tv(path) for path in paths]).numpy()
    for name, spec in specs.items():
        got, _, _ = preprocess_batch(samples, spec)
        assert got is not None
        diff = np.abs(got - expected)
        print(
            f"  {name} vs torchvision: max |diff| {diff.max():.4f}, mean {diff.mean():.5f} "
            f"(normalized units; one 8-bit level is {1 / 255 / max(STD):.4f} to "
            f"{1 / 255 / min(STD):.4f})"
        )


if __name__ == "__main__":
    main()
