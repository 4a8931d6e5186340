#!/bin/sh
# rill-tls-certs DIR NAME...: the certificates of a TLS deployment (deploy/compose.tls.yaml),
# made once: a CA, one certificate for the nodes and sentinels whose subject alternative names
# are the service NAMEs (plus localhost and 127.0.0.1), and a client certificate, all signed by
# the CA. Nothing is done when DIR/ca.crt exists, so a restart keeps the certificates (and the
# clients that trust the CA). The keys are readable by their owner only.
set -eu
dir=$1
shift
if [ -s "$dir/ca.crt" ]; then
    echo "rill-tls-certs: $dir/ca.crt exists, keeping the certificates"
    exit 0
fi
umask 077
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
days=${RILL_TLS_DAYS:-825}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
    -subj "/CN=Rill deployment CA" -keyout "$tmp/ca.key" -out "$tmp/ca.crt" 2>/dev/null
san="DNS:localhost,IP:127.0.0.1"
for name in "$@"; do
    san="$san,DNS:$name"
done
sign() {  # sign NAME CN EXTENSIONS
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$2" \
        -keyout "$tmp/$1.key" -out "$tmp/$1.csr" 2>/dev/null
    printf '%s\n' "$3" > "$tmp/$1.ext"
    openssl x509 -req -in "$tmp/$1.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" -CAcreateserial \
        -days "$days" -extfile "$tmp/$1.ext" -out "$tmp/$1.crt" 2>/dev/null
}
sign node "rill node" "subjectAltName=$san
extendedKeyUsage=serverAuth,clientAuth"
sign client "rill client" "extendedKeyUsage=clientAuth"
# The CA's key stays out of the volume: nothing signs certificates once they are made.
cp "$tmp/node.crt" "$tmp/node.key" "$tmp/client.crt" "$tmp/client.key" "$dir/"
chmod 0644 "$dir/node.crt" "$dir/client.crt"
# ca.crt last: its presence says the set is complete.
cp "$tmp/ca.crt" "$dir/ca.crt.tmp" && chmod 0644 "$dir/ca.crt.tmp" && mv "$dir/ca.crt.tmp" "$dir/ca.crt"
echo "rill-tls-certs: made $dir/{ca,node,client}.crt for $*"
