package neighbour

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tinyModule writes a module example.com/tiny under a test's temporary
// directory whose main package, example.com/tiny/cmd/tiny, has the source
// given, and returns the module's directory.
func tinyModule(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":           "module example.com/tiny\n\ngo 1.22\n",
		"cmd/tiny/main.go": src,
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// tinyMain prints main.msg, which a build may set with -ldflags=-X.
const tinyMain = `package main

import "fmt"

var msg = "built"

func main() { fmt.Println(msg) }
`

// tinyBinary is a Binary of the tiny module at dir, written under a
// directory Build has to create, with GOWORK off so that no go.work around
// the temporary directory takes part.
func tinyBinary(t *testing.T, dir string, env ...string) Binary {
	return Binary{
		Dir:  dir,
		Main: "example.com/tiny/cmd/tiny",
		Out:  filepath.Join(t.TempDir(), "neighbours", "tiny"),
		Env:  append([]string{"GOWORK=off"}, env...),
	}
}

// runBinary runs the binary at path and returns its output, trimmed.
func runBinary(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command(path).CombinedOutput()
	if err != nil {
		t.Fatalf("running %s: %v\n%s", path, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestBuild(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want string // the binary's output
	}{
		{name: "plain", want: "built"},
		// The environment reaches the build: GOFLAGS sets the message.
		{name: "env", env: []string{"GOFLAGS=-buildvcs=false -ldflags=-X=main.msg=from-env"}, want: "from-env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tinyBinary(t, tinyModule(t, tinyMain), tc.env...)
			if err := Build(b); err != nil {
				t.Fatal(err)
			}
			if got := runBinary(t, b.Out); got != tc.want {
				t.Errorf("binary printed %q, want %q", got, tc.want)
			}
			// A second call must not build again: with the binary gone, a
			// rebuild would bring it back.
			if err := os.Remove(b.Out); err != nil {
				t.Fatal(err)
			}
			if err := Build(b); err != nil {
				t.Fatalf("second Build: %v", err)
			}
			if _, err := os.Stat(b.Out); !os.IsNotExist(err) {
				t.Errorf("second Build of %s built again (stat: %v)", b.Out, err)
			}
		})
	}
}

func TestBuildBrokenPackage(t *testing.T) {
	b := tinyBinary(t, tinyModule(t, "package main\n\nfunc main() { undefinedName() }\n"))
	err := Build(b)
	if err == nil {
		t.Fatal("Build of a package that does not compile succeeded")
	}
	for _, want := range []string{"go build -o " + b.Out + " " + b.Main, b.Dir, "GOWORK=off", "undefinedName"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not hold %q", err, want)
		}
	}
	// The failure is the process's answer for that binary, as a success is.
	if again := Build(b); again == nil || again.Error() != err.Error() {
		t.Errorf("second Build returned %v, want the first error again", again)
	}
}

func TestBuildSameOutOtherPackage(t *testing.T) {
	b := tinyBinary(t, tinyModule(t, tinyMain))
	if err := Build(b); err != nil {
		t.Fatal(err)
	}
	other := b
	other.Main = "example.com/tiny/cmd/other"
	err := Build(other)
	if err == nil || !strings.Contains(err.Error(), other.Main) {
		t.Errorf("Build of another package to %s returned %v, want an error naming %s", b.Out, err, other.Main)
	}
}
