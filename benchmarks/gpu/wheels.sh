#!/bin/bash
# The Python packages benchstack's embedded CLI and its GPU tests need beyond what a lent GPU
# machine's image holds (its python3 is 3.12 with torch, onnxruntime, numpy, pytest...), as
# cp312 wheels in .whl/ (git-ignored via .git/info/exclude). Run here, from the repo root;
# the device call then carries .whl and runs benchmarks/gpu/paths.sh.
set -euo pipefail
mkdir -p .whl
platforms=()
for p in manylinux_2_35 manylinux_2_34 manylinux_2_31 manylinux_2_28 manylinux_2_27 \
         manylinux_2_17 manylinux2014 manylinux1; do platforms+=(--platform "${p}_x86_64"); done
for requirement in Mako==1.4.3 SQLAlchemy==2.1.9 alembic==1.20.1 annotated-types==0.7.0 \
    cryptography==48.0.0 cffi pycparser googleapis-common-protos==1.76.0 \
    mlcommons-loadgen==6.0.17 opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 \
    opentelemetry-semantic-conventions==0.66b2 opentelemetry-proto==1.45.2 \
    opentelemetry-exporter-http-transport==0.66b2 opentelemetry-exporter-otlp-common==0.66b2 \
    opentelemetry-exporter-otlp-proto-common==1.45.2 opentelemetry-exporter-otlp-proto-http==1.45.2 \
    pydantic==2.13.4 pydantic-core==2.46.4 pydantic-settings==2.14.1 python-dotenv==1.2.2 \
    typing-inspection==0.4.2 typing-extensions==4.16.0 importlib-metadata redis==8.1.0 \
    simplejpeg==1.9.0 greenlet==3.3.2; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${platforms[@]}" -d .whl "$requirement"
done
du -sh .whl
