// Command image builds toolexec's OCI image without a container engine:
// the executor, the reconciler and the gateway (built here with go build,
// static and stamped with the version) on a minimal base made here too
// (the nonroot user 65532, the Mozilla CA bundle, /tmp), for every
// platform asked, as one multi-platform image index. The same source, Go
// version, version and revision give the same digest: nothing of the
// machine or the moment goes in (the files' times are the commit's).
//
//	go run . --version 0.1.0                       build into ./out/toolexec-0.1.0 (an OCI layout)
//	go run . --version 0.1.0 --push                and push ghcr.io/atmostonce/toolexec:0.1.0
//	go run . --version 0.1.0 --release              and pin it in deploy/k8s/components/release
//	                                               and the Helm chart (tag, digest, version)
//	go run . --version dev --platforms linux/amd64 --tarball toolexec.tar
//	                                               a docker-archive for kind load image-archive
//
// It prints the image index's digest, which is what deploy/k8s pins.
// docs/OPERATIONS.md, Releasing, is the whole release step.
//
// Its own module (deploy/image/go.mod): go-containerregistry and the CA
// bundle are release tooling, not the product's dependencies.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

type flags struct {
	build         Build
	out, tarball  string
	push, release bool
}

func parseFlags(args []string) (*flags, error) {
	f := &flags{}
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.StringVar(&f.build.Version, "version", "", "the release's version: the image's tag, its label, and what the binaries' --version prints (required)")
	fs.StringVar(&f.build.Source, "source", "../..", "the repository's root")
	fs.StringVar(&f.build.Repository, "repository", "ghcr.io/atmostonce/toolexec", "where the image is pushed (its name)")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch of the image index")
	fs.StringVar(&f.build.Revision, "revision", "", "the source's revision, in the label org.opencontainers.image.revision (default: git rev-parse HEAD, with -dirty when the tree has changes)")
	created := fs.Int64("created", -1, "the image's and its files' time, unix seconds (default: the commit time of HEAD, as SOURCE_DATE_EPOCH)")
	fs.StringVar(&f.out, "out", "", "the OCI layout directory to write (default: out/toolexec-<version>)")
	fs.StringVar(&f.tarball, "tarball", "", "also write the first platform's image as a docker-archive (kind load image-archive, k3d image import, minikube image load)")
	fs.BoolVar(&f.push, "push", false, "push the index to <repository>:<version> (credentials of docker login)")
	fs.BoolVar(&f.release, "release", false, "pin the image in deploy/k8s/components/release and deploy/helm/toolexec (tag, digest, version, revision); refused from a tree with changes")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if f.build.Version == "" {
		return nil, fmt.Errorf("--version is required")
	}
	f.build.Platforms = strings.Split(*platforms, ",")
	if *created >= 0 {
		f.build.Created = time.Unix(*created, 0).UTC()
	}
	if f.out == "" {
		f.out = filepath.Join("out", "toolexec-"+f.build.Version)
	}
	return f, nil
}

func run(args []string) error {
	f, err := parseFlags(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := f.build.fillFromGit(ctx); err != nil {
		return err
	}
	if f.release && strings.HasSuffix(f.build.Revision, "-dirty") {
		return fmt.Errorf("--release: the tree has changes (revision %s): release from a commit", f.build.Revision)
	}
	idx, err := f.build.Index(ctx)
	if err != nil {
		return err
	}
	digest, err := writeLayout(f.out, idx, f.build.Version)
	if err != nil {
		return err
	}
	fmt.Printf("%s:%s@%s (OCI layout %s; revision %s)\n", f.build.Repository, f.build.Version, digest, f.out, f.build.Revision)
	return f.publish(ctx, idx, digest)
}

// publish does what was asked besides the layout: the docker-archive, the
// push, the release component.
func (f *flags) publish(ctx context.Context, idx builtIndex, digest string) error {
	if f.tarball != "" {
		if err := writeTarball(f.tarball, idx, f.build.Repository+":"+f.build.Version); err != nil {
			return err
		}
	}
	if f.push {
		if err := push(ctx, idx, f.build.Repository+":"+f.build.Version); err != nil {
			return err
		}
	}
	if f.release {
		return writeRelease(f.build.Source, Release{Repository: f.build.Repository, Version: f.build.Version, Digest: digest, Revision: f.build.Revision})
	}
	return nil
}
