"""What preprocessing may read and make: shards, image and file sizes, its memory."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class DataLimits(BaseSettings):
    """The dataset and preprocessing fields of ``Settings``."""

    # Samples per preprocessing shard: the unit of parallel work and of reuse.
    shard_samples: int = Field(default=64, ge=1)
    # The most pixels one image may have when decoded (after any reduced-scale JPEG
    # decoding); a larger one is a per-sample error, refused from its header, so a folder
    # of huge images cannot exhaust memory. 50 megapixels is an 8660x5773 photo.
    max_image_pixels: int = Field(default=50_000_000, ge=1)
    # What a sample's preprocessing may make of it, checked from its header before any
    # pixel is decoded (services/preprocess/sizes.py): the most pixels any step's output
    # may have (a 1x60000 image resized to 256 on its short side would be 256 x 15360000),
    # and the longest side over the shortest. 4096 x 4096 is the largest square a
    # manifest's sides allow (max_image_side).
    max_output_pixels: int = Field(default=4096 * 4096, ge=1)
    max_aspect_ratio: float = Field(default=100.0, ge=1)
    # The bytes one dataset file may have, and all the files one evaluation's samples may
    # have together, checked with stat before any byte is read (services/preprocess/
    # sample_files.py): by the scheduler, which hashes them for the shard keys, and by the
    # preprocess workers, which decode them. A larger file is that sample's error, never
    # read (a 3 GB file took the scheduler to 3.3 GB); a larger total fails the evaluation
    # at planning. 256 MiB holds any photo (a 50-megapixel TIFF is 150 MB); 64 GiB is
    # 100,000 samples (max_samples) of 640 KB, five times ImageNet's mean.
    max_sample_bytes: int = Field(default=256 * 2**20, ge=1)
    max_dataset_bytes: int = Field(default=64 * 2**30, ge=1)
    # The memory one preprocessing process may allocate beyond what it held when it
    # started (its address-space limit, RLIMIT_AS): a shard that needs more fails with
    # "needed more than N GB" instead of the kernel's OOM killer picking a victim. 0: no
    # limit.
    max_preprocess_memory_mb: int = Field(default=4096, ge=0)
    # The synthetic datasets kept made (<data_dir>/synthetic, content-addressed by seed,
    # count and generator): past this the least recently used are evicted, though never
    # one used in the last 10 minutes. 10,000 samples are about 860 MB.
    synthetic_cache_mb: int = Field(default=4096, ge=0)
