// Command image writes caldera-scheduler's container image as a tarball, with
// no Docker engine and no registry: one layer holding the static binary (and
// the default KubeSchedulerConfiguration) on an empty base, run as the
// non-root user 65532. The tarball is an OCI image layout that also carries
// `docker save`'s manifest.json, so `docker load`, `kind load image-archive`,
// `ctr images import` and `crane push` all read it.
//
// The same inputs give the same bytes: every timestamp is --epoch (the
// commit's time, from `make image`), files are owned by 0:0 with fixed modes,
// and the layer is compressed by one library at one level. `make image` runs
// it; docs/deploy.md says how to load and push the result.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the image's user and group: distroless's "nonroot", which the
// Deployment's securityContext (runAsUser/runAsGroup 65532) expects too.
const User = "65532:65532"

// File is one file of the image's layer.
type File struct {
	// Src is read from the build machine; Dst is its absolute path in the
	// image.
	Src, Dst string
	// Mode is its permission bits: 0o755 for the binary, 0o644 otherwise.
	Mode int64
}

// Spec is what the image holds and says about itself.
type Spec struct {
	Files      []File
	Entrypoint []string
	Cmd        []string
	// Labels become the config's labels (OCI annotation keys:
	// org.opencontainers.image.version, .revision, .source).
	Labels map[string]string
	// Epoch is every timestamp in the image: layer entries, the config's
	// created time and its history.
	Epoch time.Time
	// OS and Arch are the platform the binary was built for.
	OS, Arch string
}

// Build assembles the image of spec.
func Build(spec Spec) (v1.Image, error) {
	if len(spec.Files) == 0 || len(spec.Entrypoint) == 0 {
		return nil, errors.New("an image needs at least one file and an entrypoint")
	}
	data, err := layerTar(spec.Files, spec.Epoch)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: spec.Epoch},
			CreatedBy: "hack/image: " + strings.Join(dsts(spec.Files), " "),
			Comment:   "built without a Docker engine",
		},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = spec.OS, spec.Arch
	cf.Created = v1.Time{Time: spec.Epoch}
	cf.Config = v1.Config{
		User:       User,
		Entrypoint: spec.Entrypoint,
		Cmd:        spec.Cmd,
		Labels:     spec.Labels,
		WorkingDir: "/",
	}
	return mutate.ConfigFile(img, cf)
}

func dsts(files []File) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Dst
	}
	return out
}

// layerTar is the layer's uncompressed tar: each file and every directory
// above it, sorted, owned by 0:0, timestamped epoch.
func layerTar(files []File, epoch time.Time) ([]byte, error) {
	dirs := map[string]bool{}
	for _, f := range files {
		if !path.IsAbs(f.Dst) || path.Clean(f.Dst) != f.Dst {
			return nil, fmt.Errorf("%q: the path in the image must be absolute and clean", f.Dst)
		}
		for d := path.Dir(f.Dst); d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	type entry struct {
		name string
		file *File
	}
	var entries []entry
	for d := range dirs {
		entries = append(entries, entry{name: strings.TrimPrefix(d, "/") + "/"})
	}
	for i := range files {
		entries = append(entries, entry{name: strings.TrimPrefix(files[i].Dst, "/"), file: &files[i]})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, ModTime: epoch, Uid: 0, Gid: 0, Format: tar.FormatPAX}
		var body []byte
		if e.file == nil {
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		} else {
			var err error
			if body, err = os.ReadFile(e.file.Src); err != nil {
				return nil, err
			}
			h.Typeflag, h.Mode, h.Size = tar.TypeReg, e.file.Mode, int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write writes img tagged tag to out as one archive that every loader reads:
// an OCI image layout (oci-layout, index.json, blobs/sha256/...: `ctr images
// import`, `kind load image-archive`, `docker load` since Docker 25) that
// also holds the manifest.json of `docker save` (older Docker engines,
// `crane push`). It returns the digest of the image's OCI manifest.
func Write(img v1.Image, tag, out string, epoch time.Time) (v1.Hash, error) {
	ref, err := name.NewTag(tag)
	if err != nil {
		return v1.Hash{}, err
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return v1.Hash{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return v1.Hash{}, err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return v1.Hash{}, err
	}
	configName, err := img.ConfigName()
	if err != nil {
		return v1.Hash{}, err
	}
	blobs := map[string][]byte{blobPath(digest): manifest, blobPath(configName): config}
	layers, err := img.Layers()
	if err != nil {
		return v1.Hash{}, err
	}
	var layerPaths []string
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return v1.Hash{}, err
		}
		rc, err := l.Compressed()
		if err != nil {
			return v1.Hash{}, err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return v1.Hash{}, err
		}
		blobs[blobPath(d)] = data
		layerPaths = append(layerPaths, blobPath(d))
	}
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: mt, Digest: digest, Size: int64(len(manifest)),
			Annotations: map[string]string{
				// containerd (ctr, kind) and Docker name the image from
				// this one; the OCI ref name is the tag alone.
				"io.containerd.image.name":          containerdName(ref),
				"org.opencontainers.image.ref.name": ref.TagStr(),
			},
		}},
	})
	if err != nil {
		return v1.Hash{}, err
	}
	legacy, err := json.Marshal([]struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{Config: blobPath(configName), RepoTags: []string{ref.String()}, Layers: layerPaths}})
	if err != nil {
		return v1.Hash{}, err
	}
	members := map[string][]byte{
		"oci-layout":    []byte(`{"imageLayoutVersion":"1.0.0"}`),
		"index.json":    index,
		"manifest.json": legacy,
	}
	for p, b := range blobs {
		members[p] = b
	}
	return digest, writeArchive(out, members, epoch)
}

func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

// containerdName is ref as containerd normalizes it: docker.io/library/x:t.
func containerdName(ref name.Tag) string {
	reg := ref.Context().RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	return reg + "/" + ref.Context().RepositoryStr() + ":" + ref.TagStr()
}

// writeArchive writes members (and their directories) to out as a tar,
// sorted, every entry at epoch.
func writeArchive(out string, members map[string][]byte, epoch time.Time) error {
	dirs := map[string]bool{}
	var names []string
	for n := range members {
		names = append(names, n)
		for d := path.Dir(n); d != "."; d = path.Dir(d) {
			dirs[d+"/"] = true
		}
	}
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, n := range names {
		h := &tar.Header{Name: n, ModTime: epoch, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(members[n])), Format: tar.FormatPAX}
		if dirs[n] {
			h.Mode, h.Typeflag, h.Size = 0o755, tar.TypeDir, 0
		}
		if err = tw.WriteHeader(h); err != nil {
			break
		}
		if _, err = tw.Write(members[n]); err != nil {
			break
		}
	}
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// fileFlags collects --file src:dst[:mode] flags.
type fileFlags []File

func (f *fileFlags) String() string { return fmt.Sprint(*f) }

func (f *fileFlags) Set(v string) error {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return fmt.Errorf("%q: want src:dst or src:dst:mode", v)
	}
	file := File{Src: parts[0], Dst: parts[1], Mode: 0o644}
	if len(parts) == 3 {
		if _, err := fmt.Sscanf(parts[2], "%o", &file.Mode); err != nil {
			return fmt.Errorf("%q: mode: %w", v, err)
		}
	}
	*f = append(*f, file)
	return nil
}

// labelFlags collects --label key=value flags.
type labelFlags map[string]string

func (l labelFlags) String() string { return fmt.Sprint(map[string]string(l)) }

func (l labelFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want key=value", v)
	}
	l[k] = val
	return nil
}

func main() {
	var files fileFlags
	labels := labelFlags{}
	flag.Var(&files, "file", "a file of the image, src:dst[:octal mode] (repeatable); the first is the entrypoint")
	flag.Var(labels, "label", "a config label, key=value (repeatable)")
	tag := flag.String("tag", "caldera-scheduler:dev", "the image's name and tag in the tarball")
	out := flag.String("out", "", "the tarball to write")
	epoch := flag.Int64("epoch", 0, "every timestamp in the image, seconds since 1970 (SOURCE_DATE_EPOCH)")
	cmd := flag.String("cmd", "", "the default arguments, space-separated")
	goos := flag.String("os", "linux", "the binary's OS")
	arch := flag.String("arch", "amd64", "the binary's architecture")
	flag.Parse()
	if *out == "" || len(files) == 0 {
		fmt.Fprintln(os.Stderr, "usage: image --file bin:/usr/local/bin/x:755 [--file ...] --tag name:tag --out image.tar")
		os.Exit(2)
	}
	spec := Spec{
		Files:      files,
		Entrypoint: []string{files[0].Dst},
		Cmd:        strings.Fields(*cmd),
		Labels:     labels,
		Epoch:      time.Unix(*epoch, 0).UTC(),
		OS:         *goos,
		Arch:       *arch,
	}
	img, err := Build(spec)
	if err == nil {
		var digest v1.Hash
		if digest, err = Write(img, *tag, *out, spec.Epoch); err == nil {
			fmt.Printf("%s %s %s\n", *out, *tag, digest)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "image:", err)
	os.Exit(1)
}
