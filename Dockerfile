# syntax=docker/dockerfile:1
# Build: docker build -t dprl .
# Run:   docker run --rm -p 4222:4222 -p 9090:9090 -v dprl-data:/data dprl agent --data /data \
#          --env cartpole --nats-listen 0.0.0.0:4222 --http 0.0.0.0:9090 \
#          --nats-clients /data/clients.json --nats-tls-cert /data/tls.crt --nats-tls-key /data/tls.key
#        (off loopback the embedded NATS server needs client identities and TLS, or --insecure-nats)
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/dprl ./cmd/dprl

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/dprl /usr/local/bin/dprl
USER nonroot:nonroot
VOLUME ["/data"]
# 4222: the embedded NATS server (--nats-listen); 9090: /healthz, /readyz, /status, /metrics (--http).
EXPOSE 4222 9090
WORKDIR /data
ENTRYPOINT ["/usr/local/bin/dprl"]
CMD ["--help"]
