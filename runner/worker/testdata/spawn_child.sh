#!/bin/sh
# Starts a child and waits for it, so a timeout must take down both.
sleep 100 &
echo "child $!"
wait
