package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Build is what goes into the image, every input named: two builds of
// equal Builds from the same source with the same Go give the same
// digest.
type Build struct {
	Version    string
	Source     string   // the repository's root
	Repository string   // ghcr.io/atmostonce/toolexec
	Platforms  []string // os/arch
	Revision   string   // git rev-parse HEAD
	Created    time.Time
}

// Binaries are the commands the image holds, at its root: what deploy/k8s
// runs (/executor, /executor topics, /reconciler, /gateway).
var Binaries = []string{"executor", "reconciler", "gateway"}

// VersionVar is the variable go build stamps with the version (the
// Dockerfile stamps the same).
const VersionVar = "github.com/atmostonce/toolexec/internal/buildinfo.Version"

// GoBuildFlags are go build's flags for the image's binaries: no path,
// no build id, no symbol table, the version stamped. With CGO_ENABLED=0
// and -buildvcs=false (goEnv) the output depends on the source, the Go
// version and the version only.
func GoBuildFlags(version string) []string {
	return []string{"-trimpath", "-ldflags=-s -w -buildid= -X " + VersionVar + "=" + version}
}

// goEnv is go build's environment for one platform: static binaries
// (CGO_ENABLED=0: Pebble, franz-go and the rest are pure Go), no VCS
// stamp, the Go of the machine and no other (GOTOOLCHAIN=local: a
// toolchain download would change the binaries).
func goEnv(platform string) ([]string, error) {
	goos, goarch, ok := strings.Cut(platform, "/")
	if !ok || goos != "linux" || goarch == "" {
		return nil, fmt.Errorf("platform %q: want linux/<arch>", platform)
	}
	return append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch, "GOFLAGS=-buildvcs=false", "GOTOOLCHAIN=local"), nil
}

// buildBinaries builds Binaries for platform into dir.
func (b *Build) buildBinaries(ctx context.Context, platform, dir string) error {
	env, err := goEnv(platform)
	if err != nil {
		return err
	}
	args := append([]string{"build"}, GoBuildFlags(b.Version)...)
	args = append(args, "-o", dir+string(filepath.Separator))
	for _, bin := range Binaries {
		args = append(args, "./cmd/"+bin)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Env = b.Source, env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %s: %w\n%s", platform, err, out)
	}
	return nil
}

// fillFromGit takes the revision and the time of the source's HEAD where
// they were not given.
func (b *Build) fillFromGit(ctx context.Context) error {
	if b.Revision == "" {
		rev, err := git(ctx, b.Source, "rev-parse", "HEAD")
		if err != nil {
			return err
		}
		if changes, err := git(ctx, b.Source, "status", "--porcelain", "--untracked-files=no"); err != nil {
			return err
		} else if changes != "" {
			rev += "-dirty"
		}
		b.Revision = rev
	}
	if b.Created.IsZero() {
		ct, err := git(ctx, b.Source, "log", "-1", "--format=%ct")
		if err != nil {
			return err
		}
		secs, err := strconv.ParseInt(ct, 10, 64)
		if err != nil {
			return fmt.Errorf("the commit time %q: %w", ct, err)
		}
		b.Created = time.Unix(secs, 0).UTC()
	}
	return nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
