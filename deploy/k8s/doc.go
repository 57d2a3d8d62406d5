// Package k8s holds no code: deploy/k8s is the kustomize tree of
// toolexec's Kubernetes manifests (base, namespace, overlays, components),
// and this package's tests check every overlay offline: every manifest
// decodes strictly into the k8s.io/api, prometheus-operator, External
// Secrets, Strimzi and Gateway API types, the PrometheusRule and the
// KafkaUsers are the ones generated from deploy/prometheus/alerts.yml and
// deploy/kafka/acls, and the invariants hold (grace periods above the
// drain, flags the binaries have, probes, selectors, referenced
// ConfigMaps and Secrets, network policies that select toolexec's pods
// only); the dev overlay's pod is started as rendered. Regenerate with:
// go test ./deploy/k8s -run 'TestPrometheusRule|TestStrimziUsers' -update
package k8s
