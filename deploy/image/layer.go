package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// entry is one file or directory of a layer.
type entry struct {
	path     string // without a leading slash
	mode     int64  // permission bits, and 01000 for /tmp's sticky bit
	uid, gid int
	dir      bool
	data     []byte
}

// layer makes a gzipped OCI layer of entries, the same bytes for the same
// entries and time: entries in path order, every time mtime, no user or
// group names, no gzip header time or name.
func layer(entries []entry, mtime time.Time) (v1.Layer, error) {
	sort.Slice(entries, func(i, j int) bool { return entries[i].path < entries[j].path })
	var tarred bytes.Buffer
	tw := tar.NewWriter(&tarred)
	for _, e := range entries {
		if err := tw.WriteHeader(header(e, mtime)); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	var zipped bytes.Buffer
	zw, err := gzip.NewWriterLevel(&zipped, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(tarred.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	b := zipped.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}

func header(e entry, mtime time.Time) *tar.Header {
	h := &tar.Header{Name: e.path, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: mtime, Format: tar.FormatUSTAR}
	if e.dir {
		h.Typeflag, h.Name = tar.TypeDir, e.path+"/"
		return h
	}
	h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
	return h
}

// binariesLayer is the built binaries, at the image's root, root's and
// executable by all.
func binariesLayer(dir string, mtime time.Time) (v1.Layer, error) {
	var entries []entry
	for _, bin := range Binaries {
		b, err := os.ReadFile(filepath.Join(dir, bin))
		if err != nil {
			return nil, err
		}
		entries = append(entries, entry{path: bin, mode: 0o755, data: b})
	}
	return layer(entries, mtime)
}
