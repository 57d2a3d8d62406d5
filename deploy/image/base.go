package main

import (
	"bytes"
	"encoding/pem"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The base is made here rather than pulled: what distroless's static
// image gives a Go binary, and nothing else. No shell, no package
// manager, no libc (the binaries are static).
//
// Why not a base image: none can be pulled where this is built and
// checked (no registry but Go's proxy), and a base pinned by digest would
// still be someone else's bytes to trust and to follow for updates; these
// files are few enough to write, and the CA bundle is pinned by go.sum.

// Nonroot is the user the image runs as, the manifests' runAsUser
// (65532, distroless's nonroot).
const Nonroot = 65532

const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
	// Go's resolver reads the hosts file before DNS only when told so.
	nsswitch = "hosts: files dns\n"
)

// CABundlePath is where Go (and most TLS stacks) look for the system's CA
// certificates on Linux.
const CABundlePath = "etc/ssl/certs/ca-certificates.crt"

// baseLayer holds the users, the resolver's order, the CA bundle and the
// directories a process may expect: /tmp (sticky, writable by all; the
// manifests mount no /tmp and keep the root file system read-only) and
// nonroot's home.
func baseLayer(mtime time.Time) (v1.Layer, error) {
	return layer([]entry{
		{path: "etc", mode: 0o755, dir: true},
		{path: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{path: "etc/group", mode: 0o644, data: []byte(group)},
		{path: "etc/nsswitch.conf", mode: 0o644, data: []byte(nsswitch)},
		{path: "etc/ssl", mode: 0o755, dir: true},
		{path: "etc/ssl/certs", mode: 0o755, dir: true},
		{path: CABundlePath, mode: 0o644, data: caBundle()},
		{path: "home", mode: 0o755, dir: true},
		{path: "home/nonroot", mode: 0o700, uid: Nonroot, gid: Nonroot, dir: true},
		{path: "tmp", mode: 0o1777, dir: true},
	}, mtime)
}

// caBundle is the Mozilla root store as golang.org/x/crypto/x509roots
// carries it (the version in go.sum), in PEM. Roots distrusted after a
// date (a constraint PEM cannot carry) are left out: trusting them for
// every date would trust what Mozilla stopped trusting.
func caBundle() []byte {
	var b bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
	}
	return b.Bytes()
}
