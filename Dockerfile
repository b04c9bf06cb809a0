# syntax=docker/dockerfile:1
#
# mambasizer images. Build from the repository root:
#
#   docker build --target api    -t mambasizer/api:0.1.0    .   # HTTP API, CPU only, no torch
#   docker build --target worker -t mambasizer/worker:0.1.0 .   # GPU trial worker, CUDA torch
#
# CI has no Docker engine, so tests/deploy/test_deploy_dockerfile.py runs the api-build
# stage's RUN lines verbatim (on the context .dockerignore lets through, /opt/venv pointed
# at a scratch venv) and checks the worker stage's torch pin against pyproject.toml: an
# image whose install breaks fails CI.
#
# Both images carry the OCI annotations (org.opencontainers.image.*). What only the build
# knows comes in as build args:
#
#   --build-arg REVISION=$(git rev-parse HEAD) --build-arg CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ) \
#   --build-arg SOURCE=https://git.example.com/you/mambasizer
#
# VERSION defaults to the project's version (pyproject.toml and the chart's appVersion; a
# test keeps the three equal).

ARG VERSION=0.1.0
ARG REVISION=""
ARG CREATED=""
ARG SOURCE=""

# ----------------------------------------------------------------------------- api

FROM python:3.11.14-slim-bookworm AS api-build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE constraints.txt ./
COPY schemas/ schemas/
COPY service/ service/
# the import package: mambasizer/service -> ../service, mambasizer/schemas -> ../schemas
COPY mambasizer/ mambasizer/
# The project WITHOUT the `worker` extra: no torch, no CUDA on the API path. The venv has
# no pip/setuptools of its own; the build stage's pip installs into it. Every package at its
# constraints.txt version (scripts/lock_constraints.py): one tag, one set of packages.
RUN python -m venv --without-pip /opt/venv \
 && pip --python /opt/venv/bin/python install --no-cache-dir -c constraints.txt . \
 && /opt/venv/bin/mambasizer --version

FROM python:3.11.14-slim-bookworm AS api
ARG VERSION
ARG REVISION
ARG CREATED
ARG SOURCE
LABEL org.opencontainers.image.title="mambasizer-api" \
      org.opencontainers.image.description="SGLang 0.5.23 mamba/KV sizing service (HTTP API)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.vendor="mambasizer" \
      org.opencontainers.image.base.name="docker.io/library/python:3.11.14-slim-bookworm"
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# No build tooling in the final image: drop the base image's pip/setuptools/wheel.
RUN python -m pip uninstall --yes --quiet pip setuptools wheel \
 && groupadd --system --gid 10001 mambasizer \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin mambasizer
COPY --from=api-build /opt/venv /opt/venv
USER 10001:10001
EXPOSE 8000
# python, not curl: the slim image has no curl.
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/livez', timeout=2).status == 200 else 1)"]
ENTRYPOINT ["mambasizer"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]

# ----------------------------------------------------------------------------- worker

FROM python:3.11.14-slim-bookworm AS worker-build
# The CUDA build of torch comes from the PyTorch index; the pin is the `worker` extra's. It
# comes alone (--no-deps): the second install resolves its dependencies from PyPI at their
# constraints.txt versions (that index carries few of those versions), and the nvidia-* and
# triton wheels at the exact versions this torch wheel names.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE constraints.txt ./
COPY schemas/ schemas/
COPY service/ service/
# the import package: mambasizer/service -> ../service, mambasizer/schemas -> ../schemas
COPY mambasizer/ mambasizer/
# DL3013 takes ".[worker]" (this project, its torch pinned above and in pyproject.toml) for an
# unpinned registry package.
# hadolint ignore=DL3013
RUN python -m venv --without-pip /opt/venv \
 && pip --python /opt/venv/bin/python install --no-cache-dir -c constraints.txt --no-deps --index-url "${TORCH_INDEX_URL}" torch==2.13.0 \
 && pip --python /opt/venv/bin/python install --no-cache-dir -c constraints.txt ".[worker]" \
 && /opt/venv/bin/mambasizer --version

FROM python:3.11.14-slim-bookworm AS worker
ARG VERSION
ARG REVISION
ARG CREATED
ARG SOURCE
LABEL org.opencontainers.image.title="mambasizer-worker" \
      org.opencontainers.image.description="SGLang 0.5.23 mamba/KV sizing: GPU trial worker" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.vendor="mambasizer" \
      org.opencontainers.image.base.name="docker.io/library/python:3.11.14-slim-bookworm"
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility
# No NVIDIA_VISIBLE_DEVICES=all here: the device plugin (or `docker run --gpus`) names the
# GPU; an image-wide "all" would hand every GPU to a pod that requested none.
RUN python -m pip uninstall --yes --quiet pip setuptools wheel \
 && groupadd --system --gid 10001 mambasizer \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin mambasizer
COPY --from=worker-build /opt/venv /opt/venv
USER 10001:10001
EXPOSE 8001
ENTRYPOINT ["mambasizer"]
CMD ["worker", "--host", "0.0.0.0", "--port", "8001"]
