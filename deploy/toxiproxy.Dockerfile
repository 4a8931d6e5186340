# Toxiproxy for the `chaos` profile of deploy/compose.yaml, from a toxiproxy-server binary
# built locally, for machines that cannot pull ghcr.io/shopify/toxiproxy. Same entry point
# as that image. The build context holds only the binary, named toxiproxy-server:
#
#   GOBIN=$PWD/ctx go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0
#   mv ctx/server ctx/toxiproxy-server
#   docker build -f deploy/toxiproxy.Dockerfile --build-arg BASE=debian:bookworm-slim -t toxiproxy:local ctx
ARG BASE=debian:bookworm-slim
FROM ${BASE}
COPY toxiproxy-server /toxiproxy
USER nobody
EXPOSE 8474
ENTRYPOINT ["/toxiproxy"]
CMD ["-host=0.0.0.0"]
