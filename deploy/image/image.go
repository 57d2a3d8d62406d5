package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// builtIndex is the multi-platform image and its images, in the order of
// Build.Platforms.
type builtIndex struct {
	index  v1.ImageIndex
	images []v1.Image
}

// Index builds the image of every platform and the index over them.
func (b *Build) Index(ctx context.Context) (builtIndex, error) {
	out := builtIndex{index: mutate.IndexMediaType(empty.Index, types.OCIImageIndex)}
	var adds []mutate.IndexAddendum
	for _, p := range b.Platforms {
		img, err := b.Image(ctx, p)
		if err != nil {
			return builtIndex{}, err
		}
		goos, arch, _ := strings.Cut(p, "/")
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: goos, Architecture: arch}}})
		out.images = append(out.images, img)
	}
	out.index = mutate.AppendManifests(out.index, adds...)
	return out, nil
}

// Image builds the image of one platform: the base, then the binaries.
func (b *Build) Image(ctx context.Context, platform string) (v1.Image, error) {
	dir, err := os.MkdirTemp("", "toolexec-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := b.buildBinaries(ctx, platform, dir); err != nil {
		return nil, err
	}
	base, err := baseLayer(b.Created)
	if err != nil {
		return nil, err
	}
	bins, err := binariesLayer(dir, b.Created)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, b.configFile(platform))
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: b.Created}
	return mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "deploy/image: users, CA certificates, /tmp"}},
		mutate.Addendum{Layer: bins, History: v1.History{Created: created, CreatedBy: "deploy/image: go build " + strings.Join(Binaries, " ")}})
}

// configFile is the image's configuration: /executor by default (the
// manifests name each command), as nonroot, the ports the manifests use,
// and the OCI labels of the release.
func (b *Build) configFile(platform string) *v1.ConfigFile {
	goos, arch, _ := strings.Cut(platform, "/")
	return &v1.ConfigFile{
		Architecture: arch,
		OS:           goos,
		Created:      v1.Time{Time: b.Created},
		Config: v1.Config{
			Entrypoint: []string{"/" + Binaries[0]},
			User:       fmt.Sprintf("%d:%d", Nonroot, Nonroot),
			WorkingDir: "/",
			Env:        []string{"PATH=/", "SSL_CERT_FILE=/" + CABundlePath},
			// 9464: the executor's /metrics, /healthz, /readyz; 9465:
			// the reconciler's; 8080: the gateway's API and MCP; 9466:
			// the gateway's /metrics, off the agents' port.
			ExposedPorts: map[string]struct{}{"8080/tcp": {}, "9464/tcp": {}, "9465/tcp": {}, "9466/tcp": {}},
			Labels:       b.labels(),
		},
	}
}

// labels are the OCI annotations of the image's configuration.
func (b *Build) labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "toolexec",
		"org.opencontainers.image.description": "LLM-agent tool calls, at most once per idempotency key, over Kafka transactions",
		"org.opencontainers.image.source":      "https://github.com/atmostonce/toolexec",
		"org.opencontainers.image.version":     b.Version,
		"org.opencontainers.image.revision":    b.Revision,
		"org.opencontainers.image.created":     b.Created.Format("2006-01-02T15:04:05Z"),
	}
}

// writeLayout writes idx as an OCI image layout at dir (replacing what
// was there), tagged version, and returns its digest.
func writeLayout(dir string, idx builtIndex, version string) (string, error) {
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return "", err
	}
	if err := p.AppendIndex(idx.index, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": version})); err != nil {
		return "", err
	}
	d, err := idx.index.Digest()
	return d.String(), err
}

// writeTarball writes the first platform's image as a docker-archive.
func writeTarball(path string, idx builtIndex, ref string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(path, tag, idx.images[0])
}

// push uploads the index and its images to ref.
func push(ctx context.Context, idx builtIndex, ref string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	return remote.WriteIndex(tag, idx.index, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
}
