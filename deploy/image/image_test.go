package main

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"debug/elf"
	"encoding/pem"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// testBuild is a build of both platforms, with every input fixed.
func testBuild() Build {
	return Build{Version: "0.0.0-image-test", Source: "../..", Repository: "ghcr.io/atmostonce/toolexec",
		Platforms: []string{"linux/amd64", "linux/arm64"}, Revision: "0123456789abcdef", Created: time.Unix(1767225600, 0).UTC()}
}

// The image is reproducible: a second build of the same inputs has the
// same digest. And the image, read back from its OCI layout as a
// registry client would: one image per platform, each running /executor
// as nonroot, labelled with the version and the revision, exposing the
// manifests' ports; its base holds the users, the CA bundle and /tmp; its
// binaries are static executables of the platform's architecture that
// print the version; and every command deploy/k8s runs is one of them.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the image's binaries for two platforms")
	}
	b := testBuild()
	dirs := []string{t.TempDir(), t.TempDir()}
	var digests []string
	for _, dir := range dirs {
		idx, err := b.Index(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		d, err := writeLayout(dir, idx, b.Version)
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
	}
	if digests[0] != digests[1] {
		t.Fatalf("two builds of the same inputs: %s and %s", digests[0], digests[1])
	}
	t.Logf("measured: %s twice", digests[0])
	images := layoutImages(t, dirs[0], b.Version)
	m, err := images.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != len(b.Platforms) {
		t.Fatalf("%d images, want one per platform %v", len(m.Manifests), b.Platforms)
	}
	for _, d := range m.Manifests {
		img, err := images.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(d.Platform.String(), func(t *testing.T) { checkImage(t, b, d.Platform, img) })
	}
}

// layoutImages is the image index the OCI layout at dir holds, tagged
// version.
func layoutImages(t *testing.T, dir, version string) v1.ImageIndex {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	outer, err := top.IndexManifest()
	if err != nil || len(outer.Manifests) != 1 || outer.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != version {
		t.Fatalf("the layout's index: %+v %v, want one image index tagged %s", outer, err, version)
	}
	images, err := top.ImageIndex(outer.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return images
}

func checkImage(t *testing.T, b Build, platform *v1.Platform, img v1.Image) {
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if cfg.OS != platform.OS || cfg.Architecture != platform.Architecture {
		t.Errorf("config for %s/%s, the index says %s", cfg.OS, cfg.Architecture, platform)
	}
	if !slices.Equal(c.Entrypoint, []string{"/executor"}) || c.User != "65532:65532" {
		t.Errorf("entrypoint %v, user %q: want [/executor] as 65532:65532 (the manifests' runAsUser)", c.Entrypoint, c.User)
	}
	if c.Labels["org.opencontainers.image.version"] != b.Version || c.Labels["org.opencontainers.image.revision"] != b.Revision {
		t.Errorf("labels %v: want the version %s and the revision %s", c.Labels, b.Version, b.Revision)
	}
	for _, port := range manifestPorts(t) {
		if _, ok := c.ExposedPorts[port+"/tcp"]; !ok {
			t.Errorf("port %s of deploy/k8s is not exposed (%v)", port, c.ExposedPorts)
		}
	}
	files := imageFiles(t, img)
	checkBase(t, files)
	for _, bin := range Binaries {
		checkBinary(t, files["/"+bin], platform.Architecture, b.Version)
	}
	for _, cmd := range manifestCommands(t) {
		if files[cmd] == nil {
			t.Errorf("deploy/k8s runs %s: not in the image", cmd)
		}
	}
}

// file is one file of the image as its layers leave it.
type file struct {
	hdr  *tar.Header
	data []byte
}

// imageFiles reads every layer of img, in order; a later layer's file
// replaces an earlier one's.
func imageFiles(t *testing.T, img v1.Image) map[string]*file {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("%d layers (%v), want the base and the binaries", len(layers), err)
	}
	files := map[string]*file{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(tr)
			files["/"+strings.TrimSuffix(h.Name, "/")] = &file{h, data}
		}
		rc.Close()
	}
	return files
}

// checkBase: the nonroot user and group, the CA bundle of PEM roots, a
// sticky /tmp open to all, nonroot's home, all owned by root but the home.
func checkBase(t *testing.T, files map[string]*file) {
	t.Helper()
	if f := files["/etc/passwd"]; f == nil || !strings.Contains(string(f.data), "\nnonroot:x:65532:65532:") {
		t.Error("/etc/passwd has no nonroot user 65532")
	}
	if f := files["/etc/group"]; f == nil || !strings.Contains(string(f.data), "\nnonroot:x:65532:") {
		t.Error("/etc/group has no nonroot group 65532")
	}
	roots := x509.NewCertPool()
	ca := files["/"+CABundlePath]
	if ca == nil || !roots.AppendCertsFromPEM(ca.data) || strings.Count(string(ca.data), "BEGIN CERTIFICATE") < 100 {
		t.Errorf("%s: not a CA bundle of at least 100 roots", CABundlePath)
	} else if block, _ := pem.Decode(ca.data); block == nil {
		t.Errorf("%s: no PEM block", CABundlePath)
	}
	if f := files["/tmp"]; f == nil || f.hdr.Typeflag != tar.TypeDir || f.hdr.Mode != 0o1777 {
		t.Errorf("/tmp: %+v, want a directory with mode 1777", f)
	}
	if f := files["/home/nonroot"]; f == nil || f.hdr.Uid != Nonroot || f.hdr.Gid != Nonroot {
		t.Errorf("/home/nonroot: %+v, want nonroot's", f)
	}
	for n, f := range files {
		if n != "/home/nonroot" && (f.hdr.Uid != 0 || f.hdr.Gid != 0) {
			t.Errorf("%s is owned by %d:%d, want root's", n, f.hdr.Uid, f.hdr.Gid)
		}
	}
}

// checkBinary: an executable static ELF of arch that, where this machine
// runs it, prints the version.
func checkBinary(t *testing.T, f *file, arch, version string) {
	t.Helper()
	if f == nil || f.hdr.Mode != 0o755 {
		t.Fatalf("binary %+v, want mode 755", f)
	}
	e, err := elf.NewFile(bytes.NewReader(f.data))
	if err != nil {
		t.Fatalf("%s: %v", f.hdr.Name, err)
	}
	if want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]; e.Machine != want {
		t.Errorf("%s: machine %s, want %s", f.hdr.Name, e.Machine, want)
	}
	for _, p := range e.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked: the image has no libc", f.hdr.Name)
		}
	}
	if arch != runtime.GOARCH || runtime.GOOS != "linux" {
		return
	}
	path := filepath.Join(t.TempDir(), f.hdr.Name)
	if err := os.WriteFile(path, f.data, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), f.hdr.Name+" "+version+" (") {
		t.Errorf("%s --version: %q %v, want %q", f.hdr.Name, out, err, f.hdr.Name+" "+version+" (...)")
	}
}

// manifestCommands are the binaries deploy/k8s's containers run.
func manifestCommands(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile(`command: \["(/[a-z]+)"\]`).FindAllStringSubmatch(manifests(t), -1) {
		out = append(out, m[1])
	}
	if len(out) < 4 {
		t.Fatalf("deploy/k8s/base: %d commands found", len(out))
	}
	return out
}

// manifestPorts are the container ports deploy/k8s's containers listen on.
func manifestPorts(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile(`containerPort: (\d+)`).FindAllStringSubmatch(manifests(t), -1) {
		out = append(out, m[1])
	}
	return out
}

func manifests(t *testing.T) string {
	t.Helper()
	paths, err := filepath.Glob("../k8s/base/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("deploy/k8s/base: %v", err)
	}
	var all strings.Builder
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	return all.String()
}

// The Dockerfile (for builders with a Docker engine) builds the same
// binaries: its go build flags are GoBuildFlags.
func TestDockerfileBuildsTheSameBinaries(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`go build (-trimpath) -ldflags="([^"]+)"`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("Dockerfile: no go build -trimpath -ldflags=...")
	}
	got := []string{m[1], "-ldflags=" + strings.ReplaceAll(m[2], "${VERSION}", "v")}
	if want := GoBuildFlags("v"); !slices.Equal(got, want) {
		t.Errorf("Dockerfile: go build %q, deploy/image %q", got, want)
	}
}
