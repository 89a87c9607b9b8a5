# syntax=docker/dockerfile:1
#
# One image for every benchstack role; the command picks the role:
#   benchstack api --host 0.0.0.0 --port 8000
#   benchstack worker scheduler|preprocess|inference|aggregator
#   benchstack db upgrade
#
# CPU image (default base, CPU-only torch wheels keep it ~1 GB smaller):
#   docker build -t benchstack \
#     --build-arg PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu .
# GPU image, same file on a CUDA base (PyPI's torch wheels are the CUDA build):
#   docker build -t benchstack-gpu \
#     --build-arg BASE_IMAGE=nvidia/cuda:13.0.1-cudnn-runtime-ubuntu22.04 .
# Another framework set: --build-arg EXTRAS=stack,onnxruntime

ARG BASE_IMAGE=python:3.11-slim-bookworm

# ---------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS base

# A CUDA base ships no Python 3.11; take it from the distribution there, so both bases
# end with the same layout: python3.11 on PATH and a virtual environment in /opt/venv.
# Distribution packages follow the base image's tag, not pins of their own.
# hadolint ignore=DL3008
RUN if ! command -v python3.11 >/dev/null 2>&1; then \
        apt-get update \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
            ca-certificates python3.11 python3.11-venv \
        && rm -rf /var/lib/apt/lists/*; \
    fi

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_INPUT=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH

# ---------------------------------------------------------------------------
FROM base AS builder

# A compiler only in this stage: some wheels are missing on some platforms
# (mlcommons-loadgen has none for arm64) and must build from source.
# hadolint ignore=DL3008
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends build-essential \
    && include="$(python3.11 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
    && if [ ! -e "${include}/Python.h" ]; then \
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3.11-dev; \
    fi \
    && rm -rf /var/lib/apt/lists/*

# hadolint ignore=DL3013
RUN python3.11 -m venv /opt/venv \
    && pip install --no-cache-dir --upgrade pip

# Comma-separated extras of pyproject.toml: stack, torch, onnxruntime, tensorflow, triton.
ARG EXTRAS=stack,torch
# pip reads this variable itself; set it to a CPU-only torch index for the CPU image.
ARG PIP_EXTRA_INDEX_URL=

WORKDIR /src
# .dockerignore lets only the package sources, pyproject.toml and README.md through.
COPY . .
# A regular (non-editable) install: the runtime stage takes /opt/venv and nothing else,
# so package data (alembic migrations, web UI) must be declared in pyproject.toml.
# Versions are pinned in pyproject.toml, not here.
# hadolint ignore=DL3013
RUN --mount=type=cache,target=/root/.cache/pip \
    pip install ".[${EXTRAS}]"

# ---------------------------------------------------------------------------
FROM base AS runtime

LABEL org.opencontainers.image.title="benchstack" \
      org.opencontainers.image.description="Deep-learning inference benchmarking platform" \
      org.opencontainers.image.licenses="Apache-2.0"

# A fixed numeric uid (also in k8s/), so Kubernetes' runAsNonRoot can verify it.
RUN groupadd --system --gid 10001 benchstack \
    && useradd --system --uid 10001 --gid benchstack --create-home \
        --home-dir /home/benchstack --shell /usr/sbin/nologin benchstack \
    && mkdir -p /data \
    && chown benchstack:benchstack /data

COPY --from=builder /opt/venv /opt/venv

ENV BENCHSTACK_DATA_DIR=/data \
    HOME=/home/benchstack

WORKDIR /home/benchstack
USER 10001:10001

EXPOSE 8000
ENTRYPOINT ["benchstack"]
CMD ["--help"]
