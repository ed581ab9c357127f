#!/bin/sh
echo "installer for toolkit 1.4.2"
