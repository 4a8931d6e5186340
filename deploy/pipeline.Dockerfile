# The compose `pipeline` profile's image: the example Spark job (pipeline/example) with
# PySpark, pyarrow and a Java 17 runtime, run as a non-root user. The job speaks RESP only
# (pipeline/ never imports the node), so the image holds the pipeline package, not Rill.
#
#   docker build -f deploy/pipeline.Dockerfile -t rill-pipeline .    (from the repository root)
#
# BASE as for deploy/Dockerfile: any Debian bookworm image with python3.11.
ARG BASE=python:3.11-slim-bookworm

FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
# Spark's launcher scripts need bash and ps.
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
 && rm -rf /var/lib/apt/lists/*
# The versions of pyproject.toml's `spark` extra.
RUN python3 -m venv /opt/pipeline \
 && /opt/pipeline/bin/pip install "pyspark==4.3.0" "pyarrow>=15" "pandas>=2.2,<3" "redis>=5.0"
COPY pipeline /opt/pipeline-src/pipeline
COPY deploy/pipeline_job.py /opt/pipeline-src/pipeline_job.py
RUN groupadd --system --gid 999 pipeline \
 && useradd --system --uid 999 --gid pipeline --create-home --home-dir /home/pipeline --shell /usr/sbin/nologin pipeline
ENV PATH=/opt/pipeline/bin:$PATH PYTHONPATH=/opt/pipeline-src PYTHONDONTWRITEBYTECODE=1
USER pipeline
WORKDIR /home/pipeline
ENTRYPOINT ["python3", "/opt/pipeline-src/pipeline_job.py"]
