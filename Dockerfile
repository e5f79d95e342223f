# caldera-scheduler image: a static kube-scheduler with Caldera's plugins on a
# distroless, non-root base.
#
#   docker build -t caldera-scheduler:dev .
#   docker build --build-arg VERSION=v1.37.2-caldera.0.1.0 -t caldera-scheduler:v0.1.0 .
#
# The ldflags are the Makefile's (`make build`): the Kubernetes version must
# stay 1.37.x, Caldera's version rides in the pre-release part.

FROM golang:1.26 AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
# Dependencies first, so source edits reuse this layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG KUBE_VERSION=v1.37.2
ARG CALDERA_VERSION=0.1.0
ARG GIT_SHA=unknown
ARG VERSION=
RUN version="${VERSION:-${KUBE_VERSION}-caldera.${CALDERA_VERSION}+${GIT_SHA}}" && \
    go build -trimpath -ldflags "\
      -X k8s.io/component-base/version.gitVersion=${version} \
      -X k8s.io/component-base/version.gitMajor=1 \
      -X k8s.io/component-base/version.gitMinor=37 \
      -X k8s.io/component-base/version.gitCommit=${GIT_SHA} \
      -X k8s.io/component-base/version.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
      -o /out/caldera-scheduler ./cmd/scheduler

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/caldera-scheduler /usr/local/bin/caldera-scheduler
COPY manifests/scheduler/config.yaml /etc/caldera/config.yaml
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/caldera-scheduler"]
CMD ["--config=/etc/caldera/config.yaml"]
