package k8s

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// The network policies: everything denied by default, then DNS and Kafka
// for every component, the tools for the executor and the reconciler,
// and into a pod only its metrics port from the monitoring namespace
// (the reconciler's /pending lists tenants and keys) and, for the
// gateway, its API from the Ingress controller and agents' namespaces.
func TestNetworkPolicies(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, o *objects) {
		if !hasDefaultDeny(o) {
			t.Fatal("no default-deny policy (empty podSelector, Ingress and Egress, no rules)")
		}
		for n, p := range o.pods() {
			ingress, egress := rulesFor(o, p.Labels)
			for _, port := range []struct {
				proto corev1.Protocol
				port  int32
				what  string
			}{{corev1.ProtocolUDP, 53, "DNS"}, {corev1.ProtocolTCP, 9093, "Kafka"}} {
				if !allowsPort(egress, port.proto, port.port) {
					t.Errorf("%s: no egress to %s (%s %d)", n, port.what, port.proto, port.port)
				}
			}
			checkIngress(t, n, p, ingress)
		}
		for _, n := range []string{"tool-executor", "tool-reconciler"} {
			if _, egress := rulesFor(o, o.statefulSets[n].Spec.Template.Labels); !allowsPort(egress, corev1.ProtocolTCP, 443) {
				t.Errorf("%s: no egress to the tools (HTTPS)", n)
			}
		}
	})
}

func hasDefaultDeny(o *objects) bool {
	for _, p := range o.policies {
		if len(p.Spec.PodSelector.MatchLabels) == 0 && len(p.Spec.PodSelector.MatchExpressions) == 0 &&
			len(p.Spec.PolicyTypes) == 2 && len(p.Spec.Ingress) == 0 && len(p.Spec.Egress) == 0 {
			return true
		}
	}
	return false
}

// rulesFor collects the ingress and egress rules of every policy that
// selects pods with lbls.
func rulesFor(o *objects, lbls map[string]string) ([]networkingv1.NetworkPolicyIngressRule, []networkingv1.NetworkPolicyEgressRule) {
	var in []networkingv1.NetworkPolicyIngressRule
	var out []networkingv1.NetworkPolicyEgressRule
	for _, p := range o.policies {
		if sel := p.Spec.PodSelector; len(sel.MatchLabels)+len(sel.MatchExpressions) > 0 && selects(&sel, lbls) {
			in = append(in, p.Spec.Ingress...)
			out = append(out, p.Spec.Egress...)
		}
	}
	return in, out
}

func allowsPort(rules []networkingv1.NetworkPolicyEgressRule, proto corev1.Protocol, port int32) bool {
	for _, r := range rules {
		if hasPort(r.Ports, proto, port) {
			return true
		}
	}
	return false
}

func hasPort(ports []networkingv1.NetworkPolicyPort, proto corev1.Protocol, port int32) bool {
	for _, p := range ports {
		if p.Port != nil && p.Port.IntValue() == int(port) && (p.Protocol == nil || *p.Protocol == proto) {
			return true
		}
	}
	return false
}

// checkIngress: every rule reaching pod names its sources and ports; its
// metrics port is open to the monitoring namespace; and only the gateway
// takes anything from elsewhere, on its API port.
func checkIngress(t *testing.T, n string, p *corev1.PodTemplateSpec, rules []networkingv1.NetworkPolicyIngressRule) {
	t.Helper()
	var metricsPort int32
	for _, cp := range p.Spec.Containers[0].Ports {
		metricsPort = cp.ContainerPort
	}
	monitored := false
	for _, r := range rules {
		if len(r.From) == 0 || len(r.Ports) == 0 {
			t.Errorf("%s: an ingress rule open to any source or port: %+v", n, r)
			continue
		}
		fromMonitoring := len(r.From) == 1 && namespaceIs(r.From[0], "monitoring")
		monitored = monitored || (fromMonitoring && hasPort(r.Ports, corev1.ProtocolTCP, metricsPort))
		if !fromMonitoring && p.Labels[labelName] != "toolexec-gateway" {
			t.Errorf("%s: ingress from %+v: only the gateway takes traffic from outside monitoring", n, r.From)
		}
	}
	if metricsPort != 0 && !monitored {
		t.Errorf("%s: its port %d is not open to the monitoring namespace", n, metricsPort)
	}
}

func namespaceIs(peer networkingv1.NetworkPolicyPeer, name string) bool {
	return peer.PodSelector == nil && peer.IPBlock == nil && peer.NamespaceSelector != nil &&
		selects(peer.NamespaceSelector, map[string]string{corev1.LabelMetadataName: name})
}
