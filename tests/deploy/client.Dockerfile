# The in-network test client (client.py): redis-py on the same base image as the nodes.
ARG BASE
FROM ${BASE}
ARG REDIS_PY_VERSION
RUN python3 -m venv /opt/client && /opt/client/bin/pip install --no-cache-dir "redis==${REDIS_PY_VERSION}"
COPY client.py /client.py
ENTRYPOINT ["/opt/client/bin/python", "/client.py"]
