# Build: docker build -t countersign .
# Run:   docker run -p 8080:8080 -v countersign-data:/data countersign
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/countersign ./cmd/countersign

FROM debian:bookworm-slim
# git for worktrees and workspace checks; ca-certificates for Hedera and Anthropic.
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates git \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --create-home countersign
COPY --from=build /out/countersign /usr/local/bin/countersign
USER countersign
WORKDIR /data
ENV COUNTERSIGN_DATA_DIR=/data COUNTERSIGN_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/countersign"]
CMD ["serve"]
