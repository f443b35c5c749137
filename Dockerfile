# One image for every berth command and service: `docker run berth evaluate --snapshot /data/cluster.yaml`
FROM python:3.11-slim AS build
WORKDIR /src
COPY requirements.lock pyproject.toml README.md ./
COPY shared ./shared
COPY services ./services
RUN python -m venv /opt/berth \
 && /opt/berth/bin/pip install --no-cache-dir --require-hashes --no-deps -r requirements.lock \
 && /opt/berth/bin/pip install --no-cache-dir --no-deps --no-build-isolation .

FROM python:3.11-slim
RUN useradd --system --uid 10001 --no-create-home berth
COPY --from=build /opt/berth /opt/berth
ENV PATH=/opt/berth/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 10001
ENTRYPOINT ["berth"]
CMD ["--help"]
