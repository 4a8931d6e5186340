"""Generated protobuf and gRPC code for proto/replication.proto (see generate.py); do not edit."""
