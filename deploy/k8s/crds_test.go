package k8s

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The custom resources of other projects that the manifests use, as far
// as the manifests use them. None of the projects publishes Go types this
// module should import (Strimzi is Java; external-secrets' API module
// pulls a controller runtime, the Gateway API's a client), so these
// structs hold the fields written here, from each CRD's v1 schema, and
// are decoded strictly like the rest: a misspelt field fails.

// externalSecret is external-secrets.io/v1 ExternalSecret.
type externalSecret struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		RefreshInterval string `json:"refreshInterval"`
		SecretStoreRef  struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"secretStoreRef"`
		Target struct {
			Name string `json:"name"`
		} `json:"target"`
		Data []struct {
			SecretKey string `json:"secretKey"`
			RemoteRef struct {
				Key      string `json:"key"`
				Property string `json:"property"`
			} `json:"remoteRef"`
		} `json:"data"`
	} `json:"spec"`
}

// kafkaTopic is Strimzi's kafka.strimzi.io/v1 KafkaTopic.
type kafkaTopic struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		TopicName  string         `json:"topicName"`
		Partitions int32          `json:"partitions"`
		Replicas   int16          `json:"replicas"`
		Config     map[string]any `json:"config"`
	} `json:"spec"`
}

// kafkaUser is Strimzi's kafka.strimzi.io/v1 KafkaUser with SCRAM
// authentication and simple authorization.
type kafkaUser struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              kafkaUserSpec `json:"spec"`
}

type kafkaUserSpec struct {
	Authentication struct {
		Type string `json:"type"`
	} `json:"authentication"`
	Authorization struct {
		Type string     `json:"type"`
		ACLs []kafkaACL `json:"acls"`
	} `json:"authorization"`
}

type kafkaACL struct {
	Resource struct {
		Type        string `json:"type"`
		Name        string `json:"name,omitempty"`
		PatternType string `json:"patternType,omitempty"`
	} `json:"resource"`
	Operations []string `json:"operations"`
	Host       string   `json:"host"`
}

// httpRoute is the Gateway API's gateway.networking.k8s.io/v1 HTTPRoute
// (components/gateway-api), as far as the manifests use it.
type httpRoute struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ParentRefs []struct {
			Name        string `json:"name"`
			Namespace   string `json:"namespace"`
			SectionName string `json:"sectionName"`
		} `json:"parentRefs"`
		Hostnames []string `json:"hostnames"`
		Rules     []struct {
			Matches []struct {
				Path struct {
					Type  string `json:"type"`
					Value string `json:"value"`
				} `json:"path"`
			} `json:"matches"`
			BackendRefs []struct {
				Name string `json:"name"`
				Port int32  `json:"port"`
			} `json:"backendRefs"`
			Timeouts struct {
				Request string `json:"request"`
			} `json:"timeouts"`
		} `json:"rules"`
	} `json:"spec"`
}
