# syntax=docker/dockerfile:1
# Build: docker build -t dprl .
# Run:   docker run --rm -v dprl-data:/data dprl agent --data /data
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
WORKDIR /data
ENTRYPOINT ["/usr/local/bin/dprl"]
CMD ["--help"]
