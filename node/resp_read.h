/* Reading RESP headers in the hand-written C modules that scan the effect log's bytes
 * (node/log/_resp_scan.c, node/engine/_logged_xadd.c): the log's encoder writes lengths as
 * canonical decimals, and anything else is refused as not the log's. */
#ifndef RILL_RESP_READ_H
#define RILL_RESP_READ_H

/* The canonical decimal after a RESP type byte, up to its CRLF (1-18 digits, no sign, no
 * leading zero), or -1; on success *pp moves past the CRLF. */
static long long read_header(const unsigned char **pp, const unsigned char *end, unsigned char type) {
    const unsigned char *p = *pp;
    if (p >= end || *p != type) return -1;
    p++;
    const unsigned char *digits = p;
    long long v = 0;
    while (p < end && *p >= '0' && *p <= '9') {
        if (p - digits >= 18) return -1;
        v = v * 10 + (*p - '0');
        p++;
    }
    if (p == digits || (*digits == '0' && p - digits > 1)) return -1;
    if (end - p < 2 || p[0] != '\r' || p[1] != '\n') return -1;
    *pp = p + 2;
    return v;
}

#endif
