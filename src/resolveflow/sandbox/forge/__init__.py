"""The sandbox forge: a fake GitHub on 127.0.0.1, labelled as such."""
