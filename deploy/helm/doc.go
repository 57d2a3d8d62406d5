// Package helm holds no code: deploy/helm/toolexec is toolexec's Helm
// chart, and this package's tests check it offline (chart_test.go): with
// its default values it renders the objects of deploy/k8s/base with
// components/release and components/monitoring, as kustomize renders them
// (Helm's own engine, helm.sh/helm/v3/pkg/engine, and kustomize's
// library); each option renders what it says.
//
// Its own module (deploy/helm/go.mod): Helm's library pulls the
// Kubernetes client, which the product's module does not need.
package helm
