/* libFuzzer entry points shared by the fuzzers and the corpus replayer. */
#ifndef AGENTMUX_FUZZ_H
#define AGENTMUX_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
