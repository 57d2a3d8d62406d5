# syntax=docker/dockerfile:1
# toolexec: the executor and the reconciler in one image.
#
#   docker build -t toolexec .
#   docker run toolexec                 # /executor (the entrypoint)
#   docker run --entrypoint /reconciler toolexec --tools ...
#
# Static binaries (CGO_ENABLED=0: Pebble, franz-go and the rest are pure
# Go), on distroless static, as the distroless nonroot user (65532); no
# shell, no package manager. deploy/k8s runs this image. Not built in this
# repository's CI (there is no Docker engine there); the static build it
# does is checked by `CGO_ENABLED=0 go build ./cmd/executor ./cmd/reconciler`.
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/executor ./cmd/executor && \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/reconciler ./cmd/reconciler

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/executor /out/reconciler /
USER 65532:65532
# 9464: the executor's /metrics, /healthz, /readyz; 9465: the reconciler's.
EXPOSE 9464 9465
ENTRYPOINT ["/executor"]
