// Package kafkaconfig reads a Kafka client properties file, the kind
// kcat -F and librdkafka read, and turns it into the franz-go options that
// connect as it says: TLS (crypto/tls) and SASL (franz-go's own pkg/sasl
// plain, scram, oauth and aws). Every command of toolexec takes such a file
// with --kafka-config, and package client takes its path in its Config.
//
// What a caller does, in order:
//
//  1. cfg, err := kafkaconfig.Load(path): parse the file. An unknown
//     property, a missing ${env:} variable or ${file:} file, a value that
//     does not fit (security.protocol=SASL_SSL without sasl.mechanism)
//     is an error naming the property. Load("") is a plaintext,
//     unauthenticated config.
//  2. opts, err := cfg.Opts(): read the certificate files and build the
//     kgo options (TLS dialer, SASL mechanism). A certificate file that is
//     missing or holds no certificate is an error naming the property.
//  3. seeds := cfg.Seeds(flagValue): the seed brokers, from the command
//     line when given, else from bootstrap.servers.
//  4. err = kafkaconfig.Check(ctx, seeds, opts...): one request to the
//     seeds, bounded by CheckTimeout, that reports a broker certificate
//     that fails verification (ErrTLS), refused credentials (ErrSASL) or
//     no broker answering (ErrUnreachable). Call it at start, so that a
//     wrong file ends the process with a clear error instead of a client
//     that retries for ever.
//  5. Append opts to every kgo.NewClient of the process.
//
// The file format: one "property=value" per line; blank lines and lines
// starting with # or ! are ignored. Values may hold ${env:NAME} and
// ${file:PATH} references (package internal/secretref); kcat does not
// expand them, so a file meant for kcat too holds its values literally
// and is kept readable by its owner only.
//
// Supported properties (the librdkafka names): bootstrap.servers,
// security.protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL),
// sasl.mechanism or sasl.mechanisms (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512,
// OAUTHBEARER, AWS_MSK_IAM), sasl.username, sasl.password,
// ssl.ca.location, ssl.certificate.location, ssl.key.location,
// ssl.endpoint.identification.algorithm (https, the default, or none),
// and for OAUTHBEARER with sasl.oauthbearer.method=oidc:
// sasl.oauthbearer.client.id, sasl.oauthbearer.client.secret,
// sasl.oauthbearer.token.endpoint.url, sasl.oauthbearer.scope,
// sasl.oauthbearer.extensions. AWS_MSK_IAM (which librdkafka does not
// have) takes the access key in sasl.username, the secret key in
// sasl.password and an optional sasl.aws.session.token.
//
// A Config never prints its secrets: String redacts them.
package kafkaconfig
