package k8s

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/internal/buildinfo"
)

const dockerfile = "../../Dockerfile"

// dockerBuild is what the Dockerfile's build stage runs.
type dockerBuild struct {
	args     map[string]string // ARG defaults
	env      []string          // ENV of the build stage
	flags    []string          // go build's flags, ${VERSION} as written
	packages []string          // ./cmd/...
	text     string
}

func readDockerfile(t *testing.T) dockerBuild {
	t.Helper()
	text := strings.ReplaceAll(string(readFile(t, dockerfile)), "\\\n", " ")
	d := dockerBuild{args: map[string]string{}, text: text}
	for _, m := range regexp.MustCompile(`(?m)^ARG (\w+)=(\S+)$`).FindAllStringSubmatch(text, -1) {
		d.args[m[1]] = m[2]
	}
	if m := regexp.MustCompile(`(?m)^ENV (.+)$`).FindStringSubmatch(text); m != nil {
		d.env = strings.Fields(m[1])
	}
	m := regexp.MustCompile(`go build (-trimpath -ldflags="([^"]+)") -o /out/ ((?:\./cmd/\w+ ?)+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("Dockerfile: no `go build -trimpath -ldflags=\"...\" -o /out/ ./cmd/...`")
	}
	d.flags = []string{"-trimpath", "-ldflags=" + m[2]}
	d.packages = strings.Fields(m[3])
	return d
}

// The Dockerfile builds with the Go of go.mod, from base images pinned by
// digest, for the builder's platform (cross-compiling), every binary the
// manifests run, stamped with the version; it runs them as the manifests'
// user and exposes their ports.
func TestDockerfileMatchesTheModuleAndTheManifests(t *testing.T) {
	d := readDockerfile(t)
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(string(readFile(t, "../../go.mod")))[1]
	pinned := regexp.MustCompile(`^[a-z0-9./-]+:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}$`)
	for _, a := range []string{"GO_IMAGE", "RUNTIME_IMAGE"} {
		if !pinned.MatchString(d.args[a]) {
			t.Errorf("ARG %s=%s is not pinned by tag and digest", a, d.args[a])
		}
	}
	if !strings.HasPrefix(d.args["GO_IMAGE"], "golang:"+goVersion+"-") {
		t.Errorf("GO_IMAGE %s is not Go %s (go.mod)", d.args["GO_IMAGE"], goVersion)
	}
	for _, want := range []string{"FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build", "GOOS=$TARGETOS GOARCH=$TARGETARCH go build", "USER 65532:65532",
		"org.opencontainers.image.version=\"${VERSION}\"", "org.opencontainers.image.revision=\"${REVISION}\""} {
		if !strings.Contains(d.text, want) {
			t.Errorf("Dockerfile: no %q", want)
		}
	}
	for _, e := range []string{"GOTOOLCHAIN=local", "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false"} {
		if !contains(d.env, e) {
			t.Errorf("Dockerfile: the build stage's ENV has no %s", e)
		}
	}
	stamp := reflect.TypeOf(buildinfo.Info{}).PkgPath() + ".Version=${VERSION}"
	if !strings.Contains(d.flags[1], "-X "+stamp) || !strings.Contains(d.flags[1], "-buildid=") {
		t.Errorf("go build %v: want -X %s and -buildid=", d.flags, stamp)
	}
	exposed := strings.Fields(regexp.MustCompile(`(?m)^EXPOSE (.+)$`).FindStringSubmatch(d.text)[1])
	o := render(t, "overlays/prod")
	for n, p := range o.pods() {
		if p.Spec.SecurityContext.RunAsUser == nil || *p.Spec.SecurityContext.RunAsUser != 65532 {
			t.Errorf("%s: runAsUser is not the image's user 65532", n)
		}
		for _, c := range p.Spec.Containers {
			bin := strings.TrimPrefix(strings.Fields(c.Command[0])[0], "/")
			if !contains(d.packages, "./cmd/"+bin) || !strings.Contains(d.text, "/out/"+bin) {
				t.Errorf("%s: the image has no /%s", n, bin)
			}
			for _, port := range c.Ports {
				if !contains(exposed, itoa(port.ContainerPort)) {
					t.Errorf("%s: port %d is not exposed", n, port.ContainerPort)
				}
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }

// TestDockerfileBuild runs the build stage's go build here, with its
// environment and flags, for this machine's platform: the binaries are
// static and print the stamped version.
func TestDockerfileBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the image's binaries")
	}
	d := readDockerfile(t)
	out := t.TempDir()
	flags := []string{"build", d.flags[0], strings.ReplaceAll(d.flags[1], "${VERSION}", "0.0.0-dockerfile-test"), "-o", out + "/"}
	build := exec.Command("go", append(flags, d.packages...)...)
	build.Dir = "../.."
	build.Env = append(os.Environ(), d.env...)
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", flags, err, msg)
	}
	for _, pkg := range d.packages {
		bin := filepath.Join(out, filepath.Base(pkg))
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s is dynamically linked: the distroless static image has no libc", bin)
			}
		}
		f.Close()
		v, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(v), filepath.Base(pkg)+" 0.0.0-dockerfile-test (") {
			t.Errorf("%s --version: %q %v", bin, v, err)
		}
	}
}
