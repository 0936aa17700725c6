#!/bin/sh
# Echoes the brief back, as a worker reading its brief from stdin would.
cat
