package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// WriteKubeconfig writes a kubeconfig file for cfg (server, CA, token or
// client certificate) to path, with one cluster, user and context, all
// called name, in namespace default.
func WriteKubeconfig(cfg *rest.Config, name, path string) error {
	if cfg.BearerToken == "" && cfg.CertData == nil && cfg.CertFile == "" {
		return errors.New("writing a kubeconfig: the client config has no credentials")
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
		CertificateAuthority:     cfg.CAFile,
		TLSServerName:            cfg.ServerName,
		InsecureSkipTLSVerify:    cfg.Insecure,
	}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
		Token:                 cfg.BearerToken,
		ClientCertificateData: cfg.CertData,
		ClientCertificate:     cfg.CertFile,
		ClientKeyData:         cfg.KeyData,
		ClientKey:             cfg.KeyFile,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	kc.CurrentContext = name
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// repoMarker is the file that marks the root of a Caldera checkout.
var repoMarker = filepath.Join("manifests", "scheduler", "config.yaml")

// RepoRoot finds the Caldera repository (the nearest directory holding
// manifests/scheduler/config.yaml) at or above the working directory, then
// at or above the running executable's directory, so that both a test (run
// in its package directory) and bin/caldera-sandbox (run from anywhere)
// find the manifests.
func RepoRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, dir := range starts {
		for {
			if _, err := os.Stat(filepath.Join(dir, repoMarker)); err == nil {
				return dir, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", fmt.Errorf("cannot find the Caldera repository (%s) above the working directory or the executable", repoMarker)
}

// decodeStrict decodes YAML (or JSON) data into obj as the Kubernetes API
// machinery decodes a file it is strict about: field names match case
// sensitively, and an unknown or duplicate field is an error. A lenient
// decode would drop such a field, so that the component would run another
// configuration than the file says.
func decodeStrict(data []byte, obj any) error {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	strictErrs, err := sigsjson.UnmarshalStrict(js, obj)
	if err != nil {
		return err
	}
	return errors.Join(strictErrs...)
}
