/* replaced by test helpers */
int rlx_test_placeholder;
