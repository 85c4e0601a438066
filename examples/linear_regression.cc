// Placeholder demo until the training workflow lands.
int main() { return 0; }
