package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// spec is the image `make image` builds, with this test's own executable
// standing in for caldera-scheduler (a real static ELF; building the
// scheduler here would cost minutes).
func spec(t *testing.T, epoch time.Time) (Spec, []byte) {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return Spec{
		Files: []File{
			{Src: bin, Dst: "/usr/local/bin/caldera-scheduler", Mode: 0o755},
			{Src: cfg, Dst: "/etc/caldera/config.yaml", Mode: 0o644},
		},
		Entrypoint: []string{"/usr/local/bin/caldera-scheduler"},
		Cmd:        []string{"--config=/etc/caldera/config.yaml"},
		Labels:     map[string]string{"org.opencontainers.image.version": "v1.37.2-caldera.0.1.0+abc"},
		Epoch:      epoch,
		OS:         "linux",
		Arch:       "amd64",
	}, body
}

func write(t *testing.T, s Spec, tag string) (string, string) {
	t.Helper()
	img, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "image.tar")
	digest, err := Write(img, tag, out, s.Epoch)
	if err != nil {
		t.Fatal(err)
	}
	return out, digest.String()
}

func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// Two builds of the same inputs are the same bytes and the same digest; a
// different epoch is a different image (the timestamps are all in it).
func TestBuildIsReproducible(t *testing.T) {
	epoch := time.Unix(1764633600, 0).UTC()
	s, _ := spec(t, epoch)
	a, da := write(t, s, "caldera-scheduler:0.1.0")
	b, db := write(t, s, "caldera-scheduler:0.1.0")
	if da != db || sum(t, a) != sum(t, b) {
		t.Errorf("two builds differ: %s vs %s", da, db)
	}
	s.Epoch = epoch.Add(time.Second)
	if _, dc := write(t, s, "caldera-scheduler:0.1.0"); dc == da {
		t.Errorf("another epoch gave the same digest %s", dc)
	}
}

func TestImageContents(t *testing.T) {
	epoch := time.Unix(1764633600, 0).UTC()
	s, binary := spec(t, epoch)
	out, digest := write(t, s, "caldera-scheduler:0.1.0")

	// The tarball names the image as `docker load` and `ctr images
	// import` read it.
	var manifest []struct {
		Config           string
		RepoTags, Layers []string
	}
	if err := json.Unmarshal(readMember(t, out, "manifest.json"), &manifest); err != nil {
		t.Fatal(err)
	}
	if len(manifest) != 1 || !slices.Equal(manifest[0].RepoTags, []string{"caldera-scheduler:0.1.0"}) || len(manifest[0].Layers) != 1 {
		t.Fatalf("manifest.json = %+v, want one image tagged caldera-scheduler:0.1.0 with one layer", manifest)
	}

	// The OCI layout: index.json names the image and points at its
	// manifest, and every blob is stored under its own digest.
	var index v1.IndexManifest
	if err := json.Unmarshal(readMember(t, out, "index.json"), &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 1 || index.Manifests[0].Digest.String() != digest || index.Manifests[0].MediaType != types.OCIManifestSchema1 ||
		index.Manifests[0].Annotations["io.containerd.image.name"] != "docker.io/library/caldera-scheduler:0.1.0" ||
		index.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "0.1.0" {
		t.Fatalf("index.json = %+v, want the OCI manifest %s named docker.io/library/caldera-scheduler:0.1.0", index, digest)
	}
	if string(readMember(t, out, "oci-layout")) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Error("no oci-layout marker")
	}
	var m v1.Manifest
	if err := json.Unmarshal(blob(t, out, index.Manifests[0].Digest), &m); err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
		t.Fatalf("manifest = %+v, want an OCI config and one OCI layer", m)
	}
	blob(t, out, m.Config.Digest)
	blob(t, out, m.Layers[0].Digest)

	// `docker save`'s manifest.json names the same config and layer.
	if manifest[0].Config != "blobs/sha256/"+m.Config.Digest.Hex || manifest[0].Layers[0] != "blobs/sha256/"+m.Layers[0].Digest.Hex {
		t.Errorf("manifest.json %+v does not name the OCI manifest's blobs", manifest[0])
	}
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, s.Entrypoint) || !slices.Equal(c.Cmd, s.Cmd) ||
		c.Labels["org.opencontainers.image.version"] != "v1.37.2-caldera.0.1.0+abc" || len(c.Env) != 0 {
		t.Errorf("config = %+v; want user 65532:65532, entrypoint %v, cmd %v, the version label, no environment", c, s.Entrypoint, s.Cmd)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Time.Equal(epoch) {
		t.Errorf("platform %s/%s created %v; want linux/amd64 at %v", cf.OS, cf.Architecture, cf.Created.Time, epoch)
	}

	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d, %v; want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	type entry struct {
		mode int64
		dir  bool
		body []byte
	}
	got := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(epoch) {
			t.Errorf("%s: owner %d:%d, time %v; want 0:0 at %v", h.Name, h.Uid, h.Gid, h.ModTime, epoch)
		}
		got[h.Name] = entry{mode: h.Mode, dir: h.Typeflag == tar.TypeDir, body: body}
	}
	// Only the binary, its configuration and the directories above them:
	// no shell, no libc (the binary is static; the entrypoint is exec'd).
	want := []string{"etc/", "etc/caldera/", "etc/caldera/config.yaml", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/caldera-scheduler"}
	var names []string
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("layer holds %v, want %v", names, want)
	}
	if b := got["usr/local/bin/caldera-scheduler"]; b.mode != 0o755 || !bytes.Equal(b.body, binary) {
		t.Errorf("the binary: mode %o, %d bytes; want 755 and the %d bytes built", b.mode, len(b.body), len(binary))
	}
	if c := got["etc/caldera/config.yaml"]; c.mode != 0o644 || c.dir {
		t.Errorf("the config: mode %o", c.mode)
	}
}

func TestBuildRefusesBadInput(t *testing.T) {
	s, _ := spec(t, time.Unix(0, 0))
	for name, edit := range map[string]func(*Spec){
		"a relative path":  func(s *Spec) { s.Files[0].Dst = "usr/local/bin/x" },
		"an unclean path":  func(s *Spec) { s.Files[0].Dst = "/usr/../bin/x" },
		"no entrypoint":    func(s *Spec) { s.Entrypoint = nil },
		"a missing source": func(s *Spec) { s.Files[1].Src = filepath.Join(t.TempDir(), "absent") },
	} {
		c := s
		c.Files = slices.Clone(s.Files)
		edit(&c)
		if _, err := Build(c); err == nil {
			t.Errorf("%s: built", name)
		}
	}
}

func TestFlags(t *testing.T) {
	var files fileFlags
	if err := files.Set("bin/x:/usr/local/bin/x:755"); err != nil || files[0].Mode != 0o755 || files[0].Dst != "/usr/local/bin/x" {
		t.Errorf("--file with a mode = %+v, %v", files, err)
	}
	if err := files.Set("a:/etc/a"); err != nil || files[1].Mode != 0o644 {
		t.Errorf("--file without a mode = %+v, %v", files, err)
	}
	if err := files.Set("nodst"); err == nil {
		t.Error("--file nodst accepted")
	}
	labels := labelFlags{}
	if err := labels.Set("k=v=w"); err != nil || labels["k"] != "v=w" {
		t.Errorf("--label = %v, %v", labels, err)
	}
	if err := labels.Set("=v"); err == nil {
		t.Error("--label without a key accepted")
	}
}

// blob returns the blob of digest d in the archive, checking that its bytes
// have that digest.
func blob(t *testing.T, path string, d v1.Hash) []byte {
	t.Helper()
	data := readMember(t, path, "blobs/sha256/"+d.Hex)
	if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != d.Hex {
		t.Errorf("blob %s holds bytes of digest %x", d, got)
	}
	return data
}

// readMember returns one file of the tarball.
func readMember(t *testing.T, path, member string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s has no %s: %v", path, member, err)
		}
		if h.Name == member {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
	}
}
