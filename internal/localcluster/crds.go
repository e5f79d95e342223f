package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

const (
	// crdTimeout bounds the wait for each CRD to be Established and serve
	// creates.
	crdTimeout = 60 * time.Second
	// probeName and probeNamespace name the dry-run object that checks that
	// a CRD serves creates; nothing is stored.
	probeName      = "localcluster-probe"
	probeNamespace = metav1.NamespaceDefault
)

// ReadCRDs decodes every CustomResourceDefinition in dir/*.yaml, files in
// name order. Decoding is strict: an unknown field, or a document that is
// not an apiextensions.k8s.io/v1 CustomResourceDefinition, is an error
// (documents holding only comments are skipped), so a typo in a manifest
// fails here rather than install a CRD that silently lacks the field.
func ReadCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRD files in %s", dir)
	}
	sort.Strings(files)
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		got, err := readCRDFile(f)
		if err != nil {
			return nil, err
		}
		crds = append(crds, got...)
	}
	return crds, nil
}

func readCRDFile(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*apiextensionsv1.CustomResourceDefinition
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", path, err)
		}
		if meta.APIVersion == "" && meta.Kind == "" {
			continue // a document holding only comments
		}
		if meta.Kind != "CustomResourceDefinition" || meta.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
			return nil, fmt.Errorf("%s: expected only apiextensions.k8s.io/v1 CustomResourceDefinitions, found %s %s", path, meta.APIVersion, meta.Kind)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := decodeStrict(doc, crd); err != nil {
			return nil, fmt.Errorf("decoding CRD in %s: %w", path, err)
		}
		out = append(out, crd)
	}
}

// InstallCRDs creates every CRD of ReadCRDs(dir) through cfg and waits until
// each serves creates (WaitCRDsServed). It returns the CRDs as read.
func InstallCRDs(ctx context.Context, cfg *rest.Config, dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	crds, err := ReadCRDs(dir)
	if err != nil {
		return nil, err
	}
	client, err := apiextclientset.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	for _, crd := range crds {
		if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
	}
	if err := WaitCRDsServed(ctx, cfg, crds); err != nil {
		return nil, err
	}
	return crds, nil
}

// WaitCRDsServed waits until each CRD is Established and a dry-run create
// of its kind is served, e.g. again after an apiserver restart. The
// apiextensions server makes the first create within 2 s of a CRD becoming
// Established sleep for 2 s; the probe absorbs that here, once, and the CRDs
// are probed at once so their delays overlap. A validation error of the
// empty probe object still proves the create handler ran, so it counts as
// served.
func WaitCRDsServed(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	ext, err := apiextclientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(crds))
	for i, crd := range crds {
		wg.Go(func() {
			if errs[i] = waitEstablished(ctx, ext, crd.Name); errs[i] == nil {
				errs[i] = probeCRD(ctx, dyn, crd)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitEstablished polls until the named CRD reports Established=True.
func waitEstablished(ctx context.Context, client apiextclientset.Interface, name string) error {
	var conditions []apiextensionsv1.CustomResourceDefinitionCondition
	var last error
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, crdTimeout, true, func(ctx context.Context) (bool, error) {
		crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if last = err; err != nil {
			return false, nil
		}
		conditions = crd.Status.Conditions
		for _, c := range conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s did not become Established: %w (last conditions: %v, last error: %v)", name, err, conditions, last)
	}
	return nil
}

// probeCRD dry-run creates an empty object of the CRD's kind until the
// apiserver serves the create.
func probeCRD(ctx context.Context, dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition) error {
	version := ""
	for _, v := range crd.Spec.Versions {
		if v.Served && (version == "" || v.Storage) {
			version = v.Name
		}
	}
	if version == "" {
		return fmt.Errorf("CRD %s serves no version", crd.Name)
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(gvr.GroupVersion().String())
	obj.SetKind(crd.Spec.Names.Kind)
	obj.SetName(probeName)
	var client dynamic.ResourceInterface = dyn.Resource(gvr)
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		obj.SetNamespace(probeNamespace)
		client = dyn.Resource(gvr).Namespace(probeNamespace)
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, crdTimeout, true, func(ctx context.Context) (bool, error) {
		_, last = client.Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last == nil || apierrors.IsInvalid(last) || apierrors.IsAlreadyExists(last), nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s is not served (%s): %w (last error: %v)", crd.Name, gvr, err, last)
	}
	return nil
}
