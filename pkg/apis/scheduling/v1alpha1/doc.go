// Package v1alpha1 is Caldera's scheduling API, group scheduling.caldera.dev:
// the cluster-scoped Queue that gangs and pods are admitted through.
//
// The CRD (manifests/crds/scheduling.caldera.dev_queues.yaml) is generated
// from the markers in this package by controller-gen, and the deepcopy
// functions, clientset, listers, informers and apply configurations by
// k8s.io/code-generator: run `make generate` after editing the types.
//
// +k8s:deepcopy-gen=package
// +groupName=scheduling.caldera.dev
package v1alpha1
