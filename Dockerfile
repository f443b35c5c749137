# One image for every berth command and service; the argument picks it:
#   docker run --rm berth scorer
#   docker run --rm -v "$PWD:/data:ro" berth evaluate --snapshot /data/cluster.yaml -o table
#
# Stage `build` installs deploy/image/requirements.txt (pyproject.toml's dependencies and setuptools,
# pinned as in requirements.lock; hash-checked, no dependency resolution) into /opt/berth, builds
# berth itself as a wheel with that setuptools, then removes setuptools and pip. The runtime stage
# copies /opt/berth only: no compilers, no pip, no test or lint tools.
# It runs as UID 10001 and works with a read-only root filesystem: Python files are precompiled at
# install time, and the only writable places needed are /tmp and the working directory
# /var/lib/berth (mount a volume there for the indexer's local state).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
COPY deploy/image/requirements.txt ./
RUN python -m venv /opt/berth \
 && /opt/berth/bin/pip install --require-hashes --no-deps -r requirements.txt
COPY pyproject.toml README.md ./
COPY shared ./shared
COPY services ./services
RUN /opt/berth/bin/pip wheel --no-deps --no-build-isolation --wheel-dir /wheels . \
 && /opt/berth/bin/pip install --no-deps /wheels/berth-*.whl \
 && /opt/berth/bin/python -m pip uninstall --yes setuptools pip \
 && /opt/berth/bin/berth --version

FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="berth" \
      org.opencontainers.image.description="Kubernetes cluster events in, placement decisions out"
# The base image's own pip and setuptools are not needed at run time.
RUN PIP_ROOT_USER_ACTION=ignore python -m pip uninstall --yes pip setuptools wheel \
 && groupadd --system --gid 10001 berth \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/berth --no-create-home \
      --shell /usr/sbin/nologin berth \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/berth
COPY --from=build /opt/berth /opt/berth
ENV PATH=/opt/berth/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/var/lib/berth \
    MPLCONFIGDIR=/tmp/matplotlib
WORKDIR /var/lib/berth
USER 10001:10001
# /healthz, /readyz and /metrics of every service; the scorer also serves the scheduler extender API.
EXPOSE 8080
ENTRYPOINT ["berth"]
CMD ["--help"]
