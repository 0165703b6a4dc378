// tests/support/catch_main.cc: Catch2's main, compiled once and shared by every test.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
