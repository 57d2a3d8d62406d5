# syntax=docker/dockerfile:1
# toolexec: the executor, the reconciler and the gateway in one image
# (deploy/k8s runs /executor, /executor topics, /reconciler and /gateway).
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=0.1.0 --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) \
#     --output type=image,name=ghcr.io/atmostonce/toolexec:0.1.0,push=true,rewrite-timestamp=true .
#
# Reproducible: the base images are pinned by digest, Go is the patch
# version of go.mod (GOTOOLCHAIN=local refuses any other), the binaries are
# static (CGO_ENABLED=0: Pebble, franz-go and the rest are pure Go) and
# carry no path, VCS stamp or build id (-trimpath, -buildvcs=false,
# -buildid=), and BuildKit sets the layers' timestamps to
# SOURCE_DATE_EPOCH. The release's version is stamped into the binaries
# (--version, toolexec_build_info) and the OCI labels.
#
# Multi-arch without emulation: the build stage runs on the builder's
# platform and cross-compiles for the target's.
#
# On distroless static as its nonroot user (65532, the manifests'
# runAsUser): no shell, no package manager. Not built in this
# repository's CI (no Docker engine there): go test ./deploy/k8s checks
# this file against go.mod and the manifests and runs its go build.
#
# The digests are those the tags pointed at when pinned; to move on:
#   docker buildx imagetools inspect golang:1.26.8-bookworm
#   docker buildx imagetools inspect gcr.io/distroless/static-debian12:nonroot
ARG GO_IMAGE=golang:1.26.8-bookworm@sha256:a688600ca24f8a4d3ca77f95b0dd40704a9fc787c826660eb7ba0b641b8b175d
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab

FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ENV GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags="-s -w -buildid= -X github.com/atmostonce/toolexec/internal/buildinfo.Version=${VERSION}" -o /out/ ./cmd/executor ./cmd/reconciler ./cmd/gateway

FROM ${RUNTIME_IMAGE}
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="toolexec" \
      org.opencontainers.image.description="LLM-agent tool calls, at most once per idempotency key, over Kafka transactions" \
      org.opencontainers.image.source="https://github.com/atmostonce/toolexec" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/executor /out/reconciler /out/gateway /
USER 65532:65532
# 9464: the executor's /metrics, /healthz, /readyz; 9465: the reconciler's;
# 8080: the gateway's API, MCP, /healthz and /readyz; 9466: the gateway's
# /metrics (--metrics-addr), apart from the agents' port.
EXPOSE 8080 9464 9465 9466
ENTRYPOINT ["/executor"]
