// Package k8s holds no code: deploy/k8s/base is a kustomize base of
// toolexec's Kubernetes manifests, and this package's tests check them
// offline (manifests_test.go): every manifest decodes strictly into the
// k8s.io/api or prometheus-operator types, the PrometheusRule is the one
// generated from deploy/prometheus/alerts.yml, and the invariants hold
// (grace period above the drain, flags the binaries have, probes,
// selectors, referenced ConfigMaps and Secrets). Regenerate the
// PrometheusRule with: go test ./deploy/k8s -run TestPrometheusRule -update
package k8s
