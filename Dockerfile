# virt-advisor-apiserver image.
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) \
#     -t quay.io/kubevirt/virt-advisor-apiserver:latest .

FROM golang:1.26 AS builder
WORKDIR /src

# Dependencies first, so this layer is cached until go.mod/go.sum change.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/kubevirt/virt-advisor/pkg/version.Version=${VERSION}" \
      -o /out/virt-advisor-apiserver ./cmd/virt-advisor-apiserver

FROM gcr.io/distroless/static:nonroot
COPY --from=builder /out/virt-advisor-apiserver /usr/local/bin/virt-advisor-apiserver
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/virt-advisor-apiserver"]
