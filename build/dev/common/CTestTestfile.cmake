# CMake generated Testfile for 
# Source directory: /work/main/common
# Build directory: /work/main/build/dev/common
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
